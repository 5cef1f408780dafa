# SPDX-License-Identifier: GPL-3.0-or-later
"""Objects from arrays: an armature from bone rows, a mesh from vertex and face arrays,
vertex groups from ``{group: (indices, weights)}``.

The one way skin_audit builds Blender data: the twist experiment's rig, the test rigs
(``tests/factories/blender_rigs.py``) and the benchmark's million-vertex rig all come here.
Edit bones exist only in Edit Mode, so the armature is made the view layer's active object
and ``bpy.ops.object.mode_set`` enters and leaves Edit Mode on it (a ``temp_override`` of
the active object leaves ``mode_set`` working on the view layer's real active object); the
previous active object and its mode are restored afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import bpy
import numpy as np
from numpy.typing import ArrayLike

from ...core.errors import InputError

Vec3 = tuple[float, float, float]
#: ``{group name: (vertex indices, weights)}``; weights one value per index, or one for all.
WeightSpec = Mapping[str, tuple[ArrayLike, ArrayLike]]


@dataclass(frozen=True)
class BoneSpec:
    """One bone in armature space; ``parent`` names a bone listed before it."""

    name: str
    head: Vec3
    tail: Vec3
    parent: str | None = None
    roll: float = 0.0
    use_deform: bool = True
    bbone_segments: int = 1
    use_connect: bool = False


def enter_edit(view_layer: bpy.types.ViewLayer, obj: bpy.types.Object) -> tuple[bpy.types.Object | None, str]:
    """Make ``obj`` active in Edit Mode; return the previous active object and its mode."""
    previous = view_layer.objects.active
    previous_mode = previous.mode if previous is not None else "OBJECT"
    if previous is not None and previous_mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    return previous, previous_mode


def leave_edit(view_layer: bpy.types.ViewLayer, previous: bpy.types.Object | None, previous_mode: str) -> None:
    bpy.ops.object.mode_set(mode="OBJECT")
    view_layer.objects.active = previous
    if previous is not None and previous_mode != "OBJECT":
        bpy.ops.object.mode_set(mode=previous_mode)


def build_armature(
    name: str, bones: Sequence[BoneSpec], collection: bpy.types.Collection | None = None,
    view_layer: bpy.types.ViewLayer | None = None,
) -> bpy.types.Object:
    """A new armature object with ``bones`` (armature space), linked to ``collection``."""
    collection = collection or bpy.context.scene.collection
    view_layer = view_layer or bpy.context.view_layer
    names = [b.name for b in bones]
    if len(set(names)) != len(names):
        raise InputError(f"bone names must be unique, got {names}")
    for b in bones:
        if b.parent is not None and b.parent not in names[: names.index(b.name)]:
            raise InputError(f"bone {b.name!r}: parent {b.parent!r} must be listed before it")
        if np.allclose(b.head, b.tail):
            raise InputError(f"bone {b.name!r} has zero length (head == tail); Blender would delete it")
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    collection.objects.link(arm)
    previous, previous_mode = enter_edit(view_layer, arm)
    try:
        edit = {}
        for b in bones:
            eb = data.edit_bones.new(b.name)
            eb.head, eb.tail, eb.roll = b.head, b.tail, b.roll
            eb.use_deform = b.use_deform
            eb.bbone_segments = b.bbone_segments
            if b.parent is not None:
                eb.parent = edit[b.parent]
                eb.use_connect = b.use_connect
            edit[b.name] = eb
    finally:
        leave_edit(view_layer, previous, previous_mode)
    return arm


def mesh_from_arrays(name: str, vertices: ArrayLike, faces: Sequence[Sequence[int]] | ArrayLike = ()) -> bpy.types.Mesh:
    """A mesh datablock from (V, 3) positions and faces (index lists, or an (F, k) int array).

    Filled with ``foreach_set`` (a million vertices in well under a second), not ``from_pydata``.
    """
    co = np.asarray(vertices, dtype=np.float32)
    if co.ndim != 2 or co.shape[1] != 3:
        raise InputError(f"mesh {name!r}: vertices must have shape (V, 3), got {co.shape}")
    if isinstance(faces, np.ndarray) and faces.ndim == 2:  # (F, k): no Python loop over a million faces
        loops = faces.astype(np.int32).ravel()
        sizes = np.full(len(faces), faces.shape[1], dtype=np.int32)
    else:
        polys = [np.asarray(f, dtype=np.int32).ravel() for f in faces]
        loops = np.concatenate(polys) if polys else np.zeros(0, dtype=np.int32)
        sizes = np.array([len(p) for p in polys], dtype=np.int32)
    me = bpy.data.meshes.new(name)
    me.vertices.add(len(co))
    me.vertices.foreach_set("co", co.ravel())
    if len(sizes):
        if loops.min() < 0 or loops.max() >= len(co):
            raise InputError(f"mesh {name!r}: a face uses a vertex index outside 0..{len(co) - 1}")
        me.loops.add(len(loops))
        me.loops.foreach_set("vertex_index", loops)
        me.polygons.add(len(sizes))
        me.polygons.foreach_set("loop_start", (np.cumsum(sizes) - sizes).astype(np.int32))
        if hasattr(me.polygons[0], "loop_total"):  # read-only from Blender 4.0 on (derived from loop_start)
            try:
                me.polygons.foreach_set("loop_total", sizes)
            except (AttributeError, TypeError, RuntimeError):
                pass
    me.update(calc_edges=True)
    return me


def add_weights(obj: bpy.types.Object, weights: WeightSpec) -> None:
    """Create (or extend) vertex groups: one ``add`` call per distinct weight value of each group."""
    for group_name, (indices, values) in weights.items():
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        w = np.broadcast_to(np.asarray(values, dtype=np.float64), idx.shape)
        if idx.size and (idx.min() < 0 or idx.max() >= len(obj.data.vertices)):
            raise InputError(f"group {group_name!r}: vertex index out of range 0..{len(obj.data.vertices) - 1}")
        if np.unique(idx).size != idx.size:
            raise InputError(f"group {group_name!r}: a vertex is listed twice; give each vertex one weight")
        group = obj.vertex_groups.get(group_name) or obj.vertex_groups.new(name=group_name)
        for value in np.unique(w):
            members = idx[w == value]
            group.add(members.tolist(), float(value), "REPLACE")
