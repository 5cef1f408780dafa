# SPDX-License-Identifier: GPL-3.0-or-later
"""Read Blender data into numpy arrays (float32 storage widened to float64)."""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]


def matrix(m) -> F64:
    """A mathutils.Matrix as a (4, 4) float64 array (rows are rows)."""
    return np.array(m, dtype=np.float64)


@dataclass(frozen=True)
class ArmatureState:
    """An armature's bones and matrices, in world space.

    ``bind[j] = A @ bone.matrix_local`` and ``current[j] = A @ pose_bone.matrix``
    with ``A`` the armature object's world matrix.
    """

    names: tuple[str, ...]
    parents: tuple[int, ...]
    use_deform: NDArray[np.bool_]
    bind: F64  # (J, 4, 4)
    current: F64  # (J, 4, 4)
    object_world: F64  # (4, 4)


def matrices(collection, prop: str) -> F64:
    """(N, 4, 4) float64 of a matrix property over a bpy collection, one ``foreach_get``."""
    n = len(collection)
    flat = np.empty(n * 16, dtype=np.float32)
    collection.foreach_get(prop, flat)
    # foreach_get flattens matrices column by column: transpose to rows.
    return flat.reshape(n, 4, 4).transpose(0, 2, 1).astype(np.float64)


def pose_matrices(arm: bpy.types.Object, names: tuple[str, ...], prop: str) -> F64:
    """(J, 4, 4) a pose-bone matrix property in ``names`` order (pose.bones may be ordered differently)."""
    pose_bones = arm.pose.bones
    raw = matrices(pose_bones, prop)
    order = {pb.name: i for i, pb in enumerate(pose_bones)}
    return raw[[order[n] for n in names]]


def bone_hierarchy(bones) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Bone names and parent indices (-1 for a root), in ``arm.data.bones`` order."""
    names = tuple(b.name for b in bones)
    index = {n: i for i, n in enumerate(names)}
    return names, tuple(index[b.parent.name] if b.parent else -1 for b in bones)


def flags(collection, prop: str) -> NDArray[np.bool_]:
    """(N,) bool of a boolean property over a bpy collection."""
    out = np.zeros(len(collection), dtype=bool)
    collection.foreach_get(prop, out)
    return out


def read_armature(arm: bpy.types.Object) -> ArmatureState:
    """Bind and current matrices of every bone of ``arm`` (in ``arm.data.bones`` order)."""
    bones = arm.data.bones
    names, parents = bone_hierarchy(bones)
    world = matrix(arm.matrix_world)
    return ArmatureState(names, parents, flags(bones, "use_deform"), world @ matrices(bones, "matrix_local"),
                         world @ pose_matrices(arm, names, "matrix"), world)


def stored_positions(mesh: bpy.types.Mesh, out: NDArray[np.float32] | None = None) -> NDArray[np.float32]:
    """(V, 3) float32 vertex positions as Blender stores them (object space), one ``foreach_get``.

    ``out``, a contiguous float32 buffer of at least V * 3 values, is read into and its start
    returned (no new (V, 3) array); without it, or when it is too small, a new one is made.
    """
    n = len(mesh.vertices) * 3
    fits = out is not None and out.dtype == np.float32 and out.flags.c_contiguous and out.size >= n
    co = out.reshape(-1)[:n] if fits else np.empty(n, dtype=np.float32)
    position = mesh.attributes.get("position")
    if position is not None:  # ~20x faster than vertices' "co"; absent while the mesh is in Edit Mode
        position.data.foreach_get("vector", co)
    else:
        mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def mesh_positions(mesh: bpy.types.Mesh, scratch: NDArray[np.float32] | None = None) -> F64:
    """(V, 3) vertex positions of a mesh datablock, as stored (object space), widened once to float64.

    ``scratch`` (float32, at least V * 3 values) holds the float32 read, so reading several
    meshes of one size allocates only their float64 results.
    """
    return stored_positions(mesh, scratch).astype(np.float64)


def mesh_triangles(mesh: bpy.types.Mesh) -> NDArray[np.intp]:
    """(T, 3) vertex indices of the mesh's triangulation."""
    mesh.calc_loop_triangles()
    tri = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tri)
    return tri.reshape(-1, 3).astype(np.intp)


def evaluated_positions(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None = None) -> F64:
    """(V, 3) positions after the modifier stack, in object space."""
    depsgraph = depsgraph or bpy.context.evaluated_depsgraph_get()
    return mesh_positions(obj.evaluated_get(depsgraph).data)
