# SPDX-License-Identifier: GPL-3.0-or-later
"""Small characters built in code with plain bpy: an armature from bone rows, meshes
with vertex groups, optionally an Armature modifier.  For the rig-level tests
(tests/rigs/): characters split into several meshes, rigs with helper bones,
meshes tied to an armature that no modifier deforms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import bpy
import numpy as np


@dataclass(frozen=True)
class Bone:
    name: str
    head: tuple[float, float, float]
    tail: tuple[float, float, float]
    parent: str = ""
    deform: bool = True
    roll: float = 0.0


def armature(name: str, bones: Sequence[Bone]) -> bpy.types.Object:
    """An armature object linked to the scene, bones in armature space (parents first)."""
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for b in bones:
        eb = data.edit_bones.new(b.name)
        eb.head, eb.tail, eb.roll = b.head, b.tail, b.roll
        eb.use_deform = b.deform
        if b.parent:
            eb.parent = data.edit_bones[b.parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def tube(x0: float, x1: float, rings: int = 6, sides: int = 8, radius: float = 0.1,
         z: float = 1.0) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """An open tube along X from x0 to x1 at height z: (V, 3) vertices and quads.

    Its vertices are symmetric about the YZ plane when (x0, x1) is mirrored, so the
    tube from (-x1, -x0) holds the exact mirror vertex of each vertex of (x0, x1).
    """
    xs = np.linspace(x0, x1, rings)
    angle = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    verts = np.array([(x, radius * np.cos(a), z + radius * np.sin(a)) for x in xs for a in angle])
    faces = [(r * sides + s, r * sides + (s + 1) % sides, (r + 1) * sides + (s + 1) % sides, (r + 1) * sides + s)
             for r in range(rings - 1) for s in range(sides)]
    return verts, faces


def mesh(name: str, verts: np.ndarray, faces: Sequence[Sequence[int]],
         groups: Mapping[str, tuple[Sequence[int], Sequence[float]]] = (),  # type: ignore[assignment]
         rig: bpy.types.Object | None = None, modifier: bool = True, parent_bone: str = "") -> bpy.types.Object:
    """A mesh object with vertex groups; parented to ``rig`` (to ``parent_bone`` when given) and
    deformed by an Armature modifier on it when ``modifier``."""
    me = bpy.data.meshes.new(name)
    me.from_pydata(np.asarray(verts, dtype=np.float64).tolist(), [], [list(f) for f in faces])
    me.update()
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    for group, (idx, w) in dict(groups).items():
        vg = obj.vertex_groups.new(name=group)
        for i, wi in zip(idx, w, strict=True):
            vg.add([int(i)], float(wi), "REPLACE")
    if rig is not None:
        obj.parent = rig
        if parent_bone:
            obj.parent_type = "BONE"
            obj.parent_bone = parent_bone
            # Keep the mesh where it was modelled: undo the bone's rest transform (its tail end).
            bpy.context.view_layer.update()
            obj.matrix_parent_inverse = (rig.matrix_world @ rig.pose.bones[parent_bone].matrix
                                         @ _translation(0.0, rig.data.bones[parent_bone].length, 0.0)).inverted()
        if modifier:
            mod = obj.modifiers.new("Armature", "ARMATURE")
            mod.object = rig
    return obj


def _translation(x: float, y: float, z: float):
    import mathutils

    return mathutils.Matrix.Translation((x, y, z))


def arm_weights(verts: np.ndarray, upper: str, lower: str, x_elbow: float, blend: float = 0.1) -> dict:
    """Weights along an arm tube: ``upper`` inside the elbow, ``lower`` outside, linear across it."""
    d = np.abs(verts[:, 0]) - x_elbow
    w_lower = np.clip(0.5 + d / (2.0 * blend), 0.0, 1.0)
    idx = np.arange(len(verts))
    return {upper: (idx, 1.0 - w_lower), lower: (idx, w_lower)}


#: A small humanoid's bones: a spine and two arms along X (armature space, metres).
SPLIT_BONES = (
    Bone("spine", (0.0, 0.0, 0.6), (0.0, 0.0, 1.0)),
    Bone("upper_arm.L", (0.15, 0.0, 1.0), (0.45, 0.0, 1.0), "spine"),
    Bone("forearm.L", (0.45, 0.0, 1.0), (0.75, 0.0, 1.0), "upper_arm.L"),
    Bone("upper_arm.R", (-0.15, 0.0, 1.0), (-0.45, 0.0, 1.0), "spine"),
    Bone("forearm.R", (-0.45, 0.0, 1.0), (-0.75, 0.0, 1.0), "upper_arm.R"),
)


def split_character(name: str = "Split") -> dict[str, bpy.types.Object]:
    """A rig with a torso mesh and each arm its own mesh, ``Arm.L`` and ``Arm.R``, exact mirror
    images with mirrored weights (the game-asset layout)."""
    rig = armature(name, SPLIT_BONES)
    out = {"rig": rig}
    torso_v, torso_f = tube(-0.15, 0.15, rings=4, radius=0.12)
    out["Body"] = mesh("Body", torso_v, torso_f, {"spine": (range(len(torso_v)), [1.0] * len(torso_v))}, rig)
    for side, (x0, x1) in (("L", (0.15, 0.75)), ("R", (-0.75, -0.15))):
        v, f = tube(x0, x1, rings=13)
        out[f"Arm.{side}"] = mesh(f"Arm.{side}", v, f, arm_weights(v, f"upper_arm.{side}", f"forearm.{side}", 0.45),
                                  rig)
    bpy.context.view_layer.update()
    return out
