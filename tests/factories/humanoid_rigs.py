# SPDX-License-Identifier: GPL-3.0-or-later
"""Humanoid skeletons built in numpy, named by the usual pipelines, in a T-pose or an A-pose.

Blender's convention: Z up, the character faces -Y, its left side is +X.  The arm chain
(upper arm, lower arm, hand) turns about the shoulder joint by ``arm_degrees`` below the
horizontal, so an A-pose's angle is known exactly.  ``mesh`` gives one vertex in the middle
of each deform bone, weighted 1 to it: enough for the rig audit to run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .numpy_rigs import BoneRow, Rig

#: Generic humanoid bone -> (head, tail, parent) in a T-pose; left side only for sided bones.
_BODY: dict[str, tuple[tuple[float, float, float], tuple[float, float, float], str | None]] = {
    "hips": ((0.0, 0.0, 1.0), (0.0, 0.0, 1.1), None),
    "spine": ((0.0, 0.0, 1.1), (0.0, 0.0, 1.2), "hips"),
    "chest": ((0.0, 0.0, 1.2), (0.0, 0.0, 1.3), "spine"),
    "upperChest": ((0.0, 0.0, 1.3), (0.0, 0.0, 1.45), "chest"),
    "neck": ((0.0, 0.0, 1.45), (0.0, 0.0, 1.55), "upperChest"),
    "head": ((0.0, 0.0, 1.55), (0.0, 0.0, 1.75), "neck"),
    "Shoulder": ((0.03, 0.0, 1.42), (0.15, 0.0, 1.42), "upperChest"),
    "UpperArm": ((0.15, 0.0, 1.42), (0.45, 0.0, 1.42), "Shoulder"),
    "LowerArm": ((0.45, 0.0, 1.42), (0.72, 0.0, 1.42), "UpperArm"),
    "Hand": ((0.72, 0.0, 1.42), (0.82, 0.0, 1.42), "LowerArm"),
    "UpperLeg": ((0.1, 0.0, 0.95), (0.1, 0.0, 0.52), "hips"),
    "LowerLeg": ((0.1, 0.0, 0.52), (0.1, 0.0, 0.08), "UpperLeg"),
    "Foot": ((0.1, 0.0, 0.08), (0.1, -0.12, 0.02), "LowerLeg"),
    "Toes": ((0.1, -0.12, 0.02), (0.1, -0.2, 0.02), "Foot"),
}
_ARM = ("UpperArm", "LowerArm", "Hand")

MIXAMO = {"hips": "mixamorig:Hips", "spine": "mixamorig:Spine", "chest": "mixamorig:Spine1",
          "upperChest": "mixamorig:Spine2", "neck": "mixamorig:Neck", "head": "mixamorig:Head",
          "Shoulder": "mixamorig:{Side}Shoulder", "UpperArm": "mixamorig:{Side}Arm",
          "LowerArm": "mixamorig:{Side}ForeArm", "Hand": "mixamorig:{Side}Hand",
          "UpperLeg": "mixamorig:{Side}UpLeg", "LowerLeg": "mixamorig:{Side}Leg",
          "Foot": "mixamorig:{Side}Foot", "Toes": "mixamorig:{Side}ToeBase"}
UNREAL = {"hips": "pelvis", "spine": "spine_01", "chest": "spine_02", "upperChest": "spine_03", "neck": "neck_01",
          "head": "head", "Shoulder": "clavicle_{s}", "UpperArm": "upperarm_{s}", "LowerArm": "lowerarm_{s}",
          "Hand": "hand_{s}", "UpperLeg": "thigh_{s}", "LowerLeg": "calf_{s}", "Foot": "foot_{s}",
          "Toes": "ball_{s}"}
VROID = {"hips": "J_Bip_C_Hips", "spine": "J_Bip_C_Spine", "chest": "J_Bip_C_Chest",
         "upperChest": "J_Bip_C_UpperChest", "neck": "J_Bip_C_Neck", "head": "J_Bip_C_Head",
         "Shoulder": "J_Bip_{S}_Shoulder", "UpperArm": "J_Bip_{S}_UpperArm", "LowerArm": "J_Bip_{S}_LowerArm",
         "Hand": "J_Bip_{S}_Hand", "UpperLeg": "J_Bip_{S}_UpperLeg", "LowerLeg": "J_Bip_{S}_LowerLeg",
         "Foot": "J_Bip_{S}_Foot", "Toes": "J_Bip_{S}_ToeBase"}
#: Rigify's deform bones: the hips are "spine", the rest spine.001 ... spine.005 (no "head" word).
RIGIFY = {"hips": "DEF-spine", "spine": "DEF-spine.001", "chest": "DEF-spine.002", "upperChest": "DEF-spine.003",
          "neck": "DEF-spine.004", "head": "DEF-spine.005", "Shoulder": "DEF-shoulder.{S}",
          "UpperArm": "DEF-upper_arm.{S}", "LowerArm": "DEF-forearm.{S}", "Hand": "DEF-hand.{S}",
          "UpperLeg": "DEF-thigh.{S}", "LowerLeg": "DEF-shin.{S}", "Foot": "DEF-foot.{S}", "Toes": "DEF-toe.{S}"}


def _name(pattern: str, side: str) -> str:
    return pattern.format(Side=side.capitalize(), S=side[0].upper(), s=side[0])


def _turn_arm(point: tuple[float, float, float], pivot: tuple[float, float, float], degrees: float,
              mirror: float) -> tuple[float, float, float]:
    """``point`` turned about the Y axis through ``pivot`` so the arm drops by ``degrees``."""
    a = math.radians(degrees)
    dx, dz = point[0] - pivot[0], point[2] - pivot[2]
    return (pivot[0] + dx * math.cos(a) + dz * math.sin(a) * mirror, point[1],
            pivot[2] - dx * math.sin(a) * mirror + dz * math.cos(a))


def humanoid_rows(names: Mapping[str, str] = MIXAMO, arm_degrees: float = 0.0, *, without: Sequence[str] = (),
                  rename: Mapping[str, str] | None = None, flat: bool = False,
                  scale: float = 1.0) -> tuple[BoneRow, ...]:
    """Bone rows of a humanoid named by ``names`` (generic bone -> pattern with {Side}/{S}/{s}).

    ``without`` leaves generic bones out on the right side (``"Hand"``: no right hand; its
    children go too); ``rename`` renames final bone names; ``flat`` makes every bone a root
    (a deform hierarchy broken by helper bones, as Rigify's is); ``scale`` scales the skeleton.
    """
    rename = dict(rename or {})
    rows: list[BoneRow] = []
    dropped: set[str] = set()
    for generic, (head, tail, parent) in _BODY.items():
        sides = ("left", "right") if generic[0].isupper() else ("",)
        for side in sides:
            mirror = -1.0 if side == "right" else 1.0
            if side == "right" and (generic in without or (parent in dropped)):
                dropped.add(generic)
                continue
            h = (head[0] * mirror, head[1], head[2])
            t = (tail[0] * mirror, tail[1], tail[2])
            if generic in _ARM and arm_degrees:
                pivot = (_BODY["UpperArm"][0][0] * mirror, 0.0, _BODY["UpperArm"][0][2])
                h, t = _turn_arm(h, pivot, arm_degrees, mirror), _turn_arm(t, pivot, arm_degrees, mirror)
            name = _name(names[generic], side) if side else names[generic]
            par = None
            if parent is not None and not flat:
                par = _name(names[parent], side) if parent[0].isupper() else names[parent]
            rows.append(BoneRow(rename.get(name, name), tuple(v * scale for v in h), tuple(v * scale for v in t),
                                rename.get(par, par) if par is not None else None))
    return tuple(rows)


def humanoid_rig(rows: Sequence[BoneRow]) -> Rig:
    """One vertex in the middle of each bone, weighted 1 to it."""
    rest = np.array([(np.add(r.head, r.tail) / 2) for r in rows], dtype=np.float64)
    groups = {r.name: (np.arange(len(rows)) == k).astype(np.float64) for k, r in enumerate(rows)}
    return Rig(tuple(rows), rest, groups)


def many_joint_rig(joints: int) -> Rig:
    """A strip of ``joints`` bones in a chain along +Y, one vertex in each, weighted 1 to it."""
    rows = tuple(BoneRow(f"Bone{k:03d}", (0.0, float(k), 0.0), (0.0, float(k + 1), 0.0),
                         f"Bone{k - 1:03d}" if k else None) for k in range(joints))
    return humanoid_rig(rows)
