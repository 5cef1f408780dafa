# SPDX-License-Identifier: GPL-3.0-or-later
"""Small skinned rigs built in code, for tests and benchmarks.

:func:`build_rig` makes an armature from :class:`BoneSpec` rows, a mesh from
vertex and face arrays, vertex groups from ``{group: (indices, weights)}``
(all three through ``skin_audit/blender/build/objects.py``, the product's one
builder) and an Armature modifier with the given settings.

:func:`cylinder` and :func:`chain_weights` give a ready-made mesh and
weights along a chain of bones on the Z axis; :func:`chain_rig` puts them
together.  Nothing here checks skinning rules: rigs with defects are built on
purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import bpy
import numpy as np
from numpy.typing import ArrayLike, NDArray

from skin_audit.blender.build.objects import BoneSpec, WeightSpec, add_weights, build_armature, mesh_from_arrays
from skin_audit.core.errors import InputError

__all__ = ["BoneSpec", "WeightSpec", "add_weights", "build_armature", "build_rig", "chain_bones", "chain_rig",
           "chain_weights", "cylinder"]


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
    obj = bpy.data.objects.new(name, mesh_from_arrays(name, verts, list(faces)))
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


def exclude_from_view_layer(objects: Iterable[bpy.types.Object], name: str = "Hidden") -> None:
    """Move ``objects`` from the scene's own collection into a new collection excluded from the
    view layer, which then does not evaluate them."""
    hidden = bpy.data.collections.new(name)
    bpy.context.scene.collection.children.link(hidden)
    for obj in objects:
        bpy.context.scene.collection.objects.unlink(obj)
        hidden.objects.link(obj)
    bpy.context.view_layer.layer_collection.children[name].exclude = True


# ------------------------------------------------------------ a rig for the fixes

FIX_BONES = ("A", "B", "C", "D", "E", "F")
FIX_RINGS, FIX_SEGMENTS = 7, 8
#: Ring 3 (vertices 24..31) gets a weight in every deform group and the locked one: 7 influences.
FIX_CROWDED = np.arange(3 * FIX_SEGMENTS, 4 * FIX_SEGMENTS)


def fixable_rig(locked: bool = True) -> tuple[bpy.types.Object, bpy.types.Object]:
    """A 6-bone chain on a cylinder (clean weights), a locked deform group 'Lock' weighting the
    crowded ring, a non-deform bone 'Prop' and a group 'Ghost' naming no bone, and a bystander."""
    verts, faces = cylinder(FIX_RINGS, FIX_SEGMENTS, 0.5, 2.0)
    bones = [*chain_bones(FIX_BONES, 2.0), BoneSpec("Lock", (0.3, 0, 1.0), (0.3, 0, 1.3), "C"),
             BoneSpec("Prop", (0.8, 0, 1.0), (0.8, 0, 1.3), "C", use_deform=False)]
    weights = chain_weights(verts[:, 2], FIX_BONES, 2.0)
    obj, arm = build_rig("Body", bones, verts, faces, weights)
    w = np.zeros((len(FIX_BONES), len(verts)))
    for k, name in enumerate(FIX_BONES):
        idx, val = weights[name]
        w[k, idx] = val
    # Crowd ring 3: every bone and the locked group, decreasing weights, then normalised.
    crowd = np.linspace(0.3, 0.05, len(FIX_BONES))[:, None] * np.ones(len(FIX_CROWDED))
    crowd[0] += np.arange(len(FIX_CROWDED)) * 0.01  # distinct per vertex: a swapped column shows
    lock = np.full(len(FIX_CROWDED), 0.1)
    total = crowd.sum(axis=0) + lock
    for k, name in enumerate(FIX_BONES):
        obj.vertex_groups[name].add([0], 0.0, "ADD")  # keep group order; value set below
        for v, val in zip(FIX_CROWDED, crowd[k] / total, strict=True):
            obj.vertex_groups[name].add([int(v)], float(val), "REPLACE")
    lock_group = obj.vertex_groups.new(name="Lock")
    for v, val in zip(FIX_CROWDED, lock / total, strict=True):
        lock_group.add([int(v)], float(val), "REPLACE")
    # Vertex 0 got a 0 in every group above only to exist; restore its own weights.
    for k, name in enumerate(FIX_BONES):
        if w[k, 0] > 0:
            obj.vertex_groups[name].add([0], float(w[k, 0]), "REPLACE")
        else:
            obj.vertex_groups[name].remove([0])
    lock_group.lock_weight = locked
    obj.vertex_groups.new(name="Prop").add([40, 41], 0.5, "REPLACE")
    obj.vertex_groups.new(name="Ghost").add([42, 43, 44], 0.25, "REPLACE")
    bystander = bpy.data.objects.new("Bystander", bpy.data.meshes.new("Bystander"))
    bystander.data.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    bystander.vertex_groups.new(name="A").add([0, 1], 0.3, "REPLACE")
    bpy.context.scene.collection.objects.link(bystander)
    bpy.context.view_layer.update()
    return obj, arm
