# SPDX-License-Identifier: GPL-3.0-or-later
"""Preview in engine: a temporary copy of a skinned mesh, beside it, frozen where the chosen
engine target draws it at the current pose.  Only when the rigger asks (one undo step); a
button removes it.  The copy has no modifiers, so it shows the target's positions as they are."""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from mathutils import Matrix, Vector

from ...core.audit.engine_target import target_positions
from ...core.engines.targets import Target
from ...core.errors import InputError
from ..read.extract import ParentModifier, extract

#: Custom property on a preview object: the name of the mesh object it previews.
PREVIEW_OF = "skin_audit_engine_preview_of"
#: Custom property on a preview object: the engine target it shows.
PREVIEW_TARGET = "skin_audit_engine_preview_target"
#: The copy sits this many bounding-box widths (along world X) beside the original.
GAP = 1.25


def preview_name(obj_name: str, target: Target) -> str:
    return f"{obj_name} [engine preview: {target.name}]"


def previews(scene: bpy.types.Scene, of: str | None = None) -> list[bpy.types.Object]:
    """The engine previews in ``scene`` (of mesh object ``of`` only, when given)."""
    return [o for o in scene.objects if PREVIEW_OF in o and (of is None or o[PREVIEW_OF] == of)]


def remove_previews(scene: bpy.types.Scene, of: str | None = None) -> int:
    """Delete the previews (objects and their meshes); returns how many."""
    found = previews(scene, of)
    for obj in found:
        data = obj.data
        bpy.data.objects.remove(obj)
        if data is not None and data.users == 0:
            bpy.data.meshes.remove(data)
    return len(found)


def _can_link_into(collection: bpy.types.Collection) -> bool:
    """Objects can be added to a local collection, never to a linked or library-override one."""
    return collection.library is None and collection.override_library is None


def preview_collections(obj: bpy.types.Object, scene: bpy.types.Scene) -> list[bpy.types.Collection]:
    """Where a preview of ``obj`` goes: the local collections of ``scene`` holding ``obj``, else the
    scene's own collection (``obj`` is linked from a library or a library override)."""
    in_scene = [scene.collection, *scene.collection.children_recursive]
    homes = [c for c in obj.users_collection if c in in_scene and _can_link_into(c)]
    if not homes:
        if scene.library is not None:
            raise InputError(f"scene '{scene.name}' is linked from a library: no preview can be added to it")
        homes = [scene.collection]
    return homes


def show_engine_preview(context: bpy.types.Context, obj: bpy.types.Object, target: Target
                        ) -> tuple[bpy.types.Object, int]:
    """A copy of ``obj`` beside it, its vertices where ``target`` draws them at the current pose
    (the first Armature modifier's armature), replacing an earlier preview of ``obj``.

    Returns the copy and how many vertices the target draws nowhere (left at rest in the copy).
    """
    mods: list[Any] = [m for m in obj.modifiers if m.type == "ARMATURE" and m.object is not None and m.show_viewport]
    if not mods and obj.parent is not None and obj.parent.type == "ARMATURE" and obj.parent_type == "ARMATURE":
        mods = [ParentModifier(obj.parent)]  # Blender's hidden modifier of parent type Armature
    if obj.type != "MESH" or not mods:
        raise InputError(f"'{obj.name}' is not a mesh deformed by an Armature modifier")
    depsgraph = context.evaluated_depsgraph_get()
    skinned = extract(obj, mods[0], depsgraph)
    drawn = target_positions(skinned, target, skinned.read_pose.channel)
    finite = np.isfinite(drawn).all(axis=1)
    drawn = np.where(finite[:, None], drawn, skinned.rest)
    homes = preview_collections(obj, context.scene)
    remove_previews(context.scene, obj.name)
    name = preview_name(obj.name, target)
    data = obj.data.copy()
    copy = bpy.data.objects.new(name, data)
    try:
        for collection in homes:
            collection.objects.link(copy)
    except RuntimeError:
        # Never leave an object no scene shows (Remove Preview could not find it).
        bpy.data.objects.remove(copy)
        bpy.data.meshes.remove(data)
        raise
    copy.data.name = name
    copy[PREVIEW_OF] = obj.name
    copy[PREVIEW_TARGET] = target.name
    if copy.data.shape_keys is not None:
        copy.shape_key_clear()  # keys would override the written positions
    copy.data.vertices.foreach_set("co", drawn.astype(np.float32).ravel())
    copy.data.update()
    # Beside the user's mesh: shifted along world X by its width and a gap.
    xs = [(obj.matrix_world @ Vector(c)).x for c in obj.bound_box]
    width = max(max(xs) - min(xs), 1e-3)
    copy.matrix_world = Matrix.Translation((GAP * width, 0.0, 0.0)) @ obj.matrix_world
    return copy, int((~finite).sum())
