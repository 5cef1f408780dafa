# SPDX-License-Identifier: GPL-3.0-or-later
"""Small skinned rigs built in code, for tests and benchmarks.

:func:`build_rig` makes an armature from :class:`BoneSpec` rows, a mesh from
vertex and face arrays, vertex groups from ``{group: (indices, weights)}``
and an Armature modifier with the given settings.  Edit bones exist only in
Edit Mode, so the armature is made the view layer's active object and
``bpy.ops.object.mode_set`` enters and leaves Edit Mode on it (a
``temp_override`` of the active object leaves ``mode_set`` working on the
view layer's real active object); the previous active object and its mode are
restored afterwards.

:func:`cylinder` and :func:`chain_weights` give a ready-made mesh and
weights along a chain of bones on the Z axis; :func:`chain_rig` puts them
together.  Nothing here checks skinning rules: rigs with defects are built on
purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import bpy
import numpy as np
from numpy.typing import ArrayLike, NDArray

from skin_audit.core.errors import InputError

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


def _enter_edit(view_layer: bpy.types.ViewLayer, obj: bpy.types.Object) -> tuple[bpy.types.Object | None, str]:
    """Make ``obj`` active in Edit Mode; return the previous active object and its mode."""
    previous = view_layer.objects.active
    previous_mode = previous.mode if previous is not None else "OBJECT"
    if previous is not None and previous_mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    return previous, previous_mode


def _leave_edit(view_layer: bpy.types.ViewLayer, previous: bpy.types.Object | None, previous_mode: str) -> None:
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
    previous, previous_mode = _enter_edit(view_layer, arm)
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
        _leave_edit(view_layer, previous, previous_mode)
    return arm


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


def build_rig(
    name: str,
    bones: Sequence[BoneSpec],
    vertices: ArrayLike,
    faces: Iterable[Sequence[int]] = (),
    weights: WeightSpec | None = None,
    parent_to_armature: bool = True,
    context: bpy.types.Context | None = None,
    **modifier_settings: object,
) -> tuple[bpy.types.Object, bpy.types.Object]:
    """A mesh deformed by an armature through vertex groups and one Armature modifier.

    Parameters
    ----------
    name : the mesh object's name; the armature is ``name + "_Armature"``
    bones : armature-space bones, parents first
    vertices : (V, 3) float, mesh object space
    faces : vertex index lists (may be empty: a point cloud mesh)
    weights : ``{group: (indices, weights)}``, groups created in this order
    parent_to_armature : parent the mesh to the armature (identity parent inverse)
    modifier_settings : Armature modifier properties, e.g. ``use_deform_preserve_volume=True``,
        ``vertex_group="mask"``, ``invert_vertex_group=True``

    Returns
    -------
    (mesh object, armature object), both linked to the scene's master collection
    """
    context = context or bpy.context
    collection = context.scene.collection
    verts = np.asarray(vertices, dtype=np.float64)
    if verts.ndim != 2 or verts.shape[1] != 3:
        raise InputError(f"vertices must have shape (V, 3), got {verts.shape}")
    known = bpy.types.ArmatureModifier.bl_rna.properties.keys()
    unknown = sorted(set(modifier_settings) - set(known))
    if unknown:
        raise InputError(f"the Armature modifier has no setting {', '.join(map(repr, unknown))}")
    arm = build_armature(name + "_Armature", bones, collection, context.view_layer)
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts.tolist(), [], [list(f) for f in faces])
    me.update()
    obj = bpy.data.objects.new(name, me)
    collection.objects.link(obj)
    add_weights(obj, weights or {})
    if parent_to_armature:
        obj.parent = arm
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    for key, value in modifier_settings.items():
        setattr(mod, key, value)
    context.view_layer.update()
    return obj, arm


# ------------------------------------------------------------ ready-made parts


def cylinder(rings: int = 5, segments: int = 8, radius: float = 0.5,
             height: float = 2.0) -> tuple[NDArray[np.float64], list[tuple[int, int, int, int]]]:
    """Open cylinder about +Z from z = 0 to ``height``, ring-major, quad faces.

    Returns
    -------
    vertices : (rings * segments, 3) float64
    faces : quads, ``(rings - 1) * segments`` of them
    """
    angle = 2.0 * np.pi * np.arange(segments) / segments
    z = np.linspace(0.0, height, rings)
    verts = np.column_stack([np.tile(radius * np.cos(angle), rings), np.tile(radius * np.sin(angle), rings),
                             np.repeat(z, segments)])
    faces = [(i * segments + j, i * segments + (j + 1) % segments, (i + 1) * segments + (j + 1) % segments,
              (i + 1) * segments + j) for i in range(rings - 1) for j in range(segments)]
    return verts, faces


def chain_bones(names: Sequence[str], height: float = 2.0) -> list[BoneSpec]:
    """Bones of equal length stacked on +Z from 0 to ``height``, each the parent of the next."""
    step = height / len(names)
    return [BoneSpec(n, (0.0, 0.0, k * step), (0.0, 0.0, (k + 1) * step), names[k - 1] if k else None,
                     use_connect=k > 0) for k, n in enumerate(names)]


def chain_weights(z: NDArray[np.float64], names: Sequence[str], height: float = 2.0) -> dict[str, tuple]:
    """Piecewise-linear weights (sum 1, at most 2 bones a vertex) over bones stacked on +Z.

    Bone ``k``'s weight peaks at its middle and falls to 0 at its neighbours'
    middles; below the first middle and above the last one a vertex is rigid.
    """
    n = len(names)
    mids = (np.arange(n) + 0.5) * height / n
    t = np.interp(z, mids, np.arange(n, dtype=np.float64))  # fractional bone index
    lo = np.floor(t).astype(np.int64)
    frac = t - lo
    out: dict[str, tuple] = {}
    for k, name in enumerate(names):
        w = np.where(lo == k, 1.0 - frac, 0.0) + np.where(lo + 1 == k, frac, 0.0)
        idx = np.flatnonzero(w > 0.0)
        out[name] = (idx, w[idx])
    return out


def chain_rig(name: str = "Chain", bone_names: Sequence[str] = ("Root", "Child"), rings: int = 5,
              segments: int = 8, radius: float = 0.5, height: float = 2.0,
              context: bpy.types.Context | None = None,
              **modifier_settings: object) -> tuple[bpy.types.Object, bpy.types.Object]:
    """A cylinder skinned to a chain of bones on its axis with clean, normalised weights."""
    verts, faces = cylinder(rings, segments, radius, height)
    return build_rig(name, chain_bones(bone_names, height), verts, faces,
                     chain_weights(verts[:, 2], bone_names, height), context=context, **modifier_settings)
