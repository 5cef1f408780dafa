# SPDX-License-Identifier: GPL-3.0-or-later
"""A throw-away scene for evaluations the user's scene must not see.

Copies of the user's objects (sharing their mesh data, never writing to it)
are posed or trimmed here and evaluated by their own depsgraph; everything
created is removed on exit, so ``bpy.data`` is as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import bpy

from .animated_values import AnimatedValues

PREFIX = "__skin_audit_"


class Sandbox:
    def __init__(self, scene: bpy.types.Scene) -> None:
        self.scene = scene
        self._created: list[tuple[object, bpy.types.ID]] = []
        #: Per (mesh, modifier) name: an armature copy owning its data and the mesh copy that it
        #: alone deforms (the spot checks' copies).  The extraction shows them at Rest Position
        #: for the bind pose before the spot checks pose them: one copy of the rig fewer to build,
        #: evaluate and remove.
        self.rest_views: dict[tuple[str, str], tuple[bpy.types.Object, bpy.types.Object]] = {}

    def track(self, collection, idb):
        self._created.append((collection, idb))
        return idb

    def copy_object(self, obj: bpy.types.Object, copy_data: bool = False) -> bpy.types.Object:
        """A linked copy of ``obj`` in the sandbox (its data copied too when asked)."""
        dup = self.track(bpy.data.objects, obj.copy())
        dup.name = PREFIX + obj.name
        dup.hide_viewport = False  # hidden originals must still evaluate here
        if copy_data and obj.data is not None:
            data = obj.data.copy()
            collection = bpy.data.meshes if isinstance(data, bpy.types.Mesh) else bpy.data.armatures
            dup.data = self.track(collection, data)
        self.scene.collection.objects.link(dup)
        return dup

    @property
    def has_copies(self) -> bool:
        return bool(self._created)

    def depsgraph(self) -> bpy.types.Depsgraph:
        """The sandbox scene's evaluated depsgraph (up to date)."""
        view_layer = self.scene.view_layers[0]
        with bpy.context.temp_override(scene=self.scene, view_layer=view_layer):
            dg = bpy.context.evaluated_depsgraph_get()
        dg.update()
        return dg

    def remove_all(self) -> None:
        for collection, idb in reversed(self._created):
            try:
                collection.remove(idb)
            except ReferenceError:  # already gone with its owner
                pass
        self._created.clear()


@contextmanager
def sandbox() -> Iterator[Sandbox]:
    """A temporary scene at the user's current frame (so animation evaluates alike)."""
    frame = bpy.context.scene.frame_current if bpy.context.scene is not None else 1
    # Evaluating the sandbox writes its animation results back to the user's objects it pulls in
    # (animated_values): what the user set without a keyframe is put back once the sandbox is gone.
    kept = AnimatedValues(skip_prefix=PREFIX)
    scene = bpy.data.scenes.new(PREFIX + "scene")
    scene.frame_current = frame
    box = Sandbox(scene)
    try:
        yield box
    finally:
        try:
            # The scene, and so its depsgraph, goes first: removing an object a depsgraph still
            # holds makes Blender re-evaluate the user's objects sharing its data (a million-vertex
            # mesh: ~0.1 s at the next redraw or audit); removed after it, nothing is tagged.
            bpy.data.scenes.remove(scene)
        finally:
            try:
                box.remove_all()
            finally:
                kept.restore()
