# SPDX-License-Identifier: GPL-3.0-or-later
"""A two-bone limb built in code with one planted problem at a time, and the clean limb of the
same shape: a tube of radius 0.15 along +X from 0 to 2, its weights blending from the upper bone
to the lower one over x in [0.9, 1.1] (the joint's own position, x = 1, on a clean limb).

Planted problems (keyword arguments of :func:`limb`):

- ``joint``: the bones' joint elsewhere than the weight transition (a misplaced elbow at x = 1.5,
  or a knee above the leg at (1, 0, 0.4), outside the mesh);
- ``rolls``: each bone's roll in degrees (a rolled forearm: ``(0, 90)``);
- ``limit``: the lower bone's Limit Rotation about its local X, degrees (``(0, 170)`` folds the
  forearm into the upper arm; the clean limb stops at 60);
- ``sleeve``: a second, wider mesh from x = 0.6 to 1.6, weighted to the upper bone alone
  (``"upper"``: the forearm passes through it when the elbow bends) or like the limb under it
  (``"follow"``);
- ``strap``: a thin tube along Y through the elbow, weighted like the limb: it crosses the limb at
  rest already, a contact the audit must leave out.
"""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np

from skin_audit.blender.build.objects import mesh_from_arrays

from .blender_rigs import BoneSpec, add_weights, build_rig

RADIUS = 0.15
SIDES = 16
STEP = 0.05


def _tube(x0: float, x1: float, radius: float) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    rings = int(round((x1 - x0) / STEP)) + 1
    xs = np.linspace(x0, x1, rings)
    angle = 2.0 * np.pi * np.arange(SIDES) / SIDES
    verts = np.column_stack([np.repeat(xs, SIDES), np.tile(radius * np.cos(angle), rings),
                             np.tile(radius * np.sin(angle), rings)])
    faces = [(r * SIDES + s, r * SIDES + (s + 1) % SIDES, (r + 1) * SIDES + (s + 1) % SIDES, (r + 1) * SIDES + s)
             for r in range(rings - 1) for s in range(SIDES)]
    return verts, faces


def _weights(x: np.ndarray, names: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    lower = np.clip((x - 0.9) / 0.2, 0.0, 1.0)
    out = {}
    for name, w in ((names[0], 1.0 - lower), (names[1], lower)):
        idx = np.flatnonzero(w > 0)
        out[name] = (idx, w[idx])
    return out


def limb(name: str = "Limb", names: Sequence[str] = ("UpperArm", "Forearm"),
         joint: tuple[float, float, float] = (1.0, 0.0, 0.0), rolls: tuple[float, float] = (0.0, 0.0),
         limit: tuple[float, float] | None = (0.0, 60.0), sleeve: str | None = None, strap: bool = False
         ) -> tuple[bpy.types.Object, bpy.types.Object, bpy.types.Object | None]:
    """(limb mesh, armature, sleeve or strap mesh or None), evaluated."""
    verts, faces = _tube(0.0, 2.0, RADIUS)
    bones = [BoneSpec(names[0], (0.0, 0.0, 0.0), joint, roll=np.radians(rolls[0])),
             BoneSpec(names[1], joint, (2.0, 0.0, 0.0), names[0], roll=np.radians(rolls[1]), use_connect=True)]
    obj, arm = build_rig(name, bones, verts, faces, _weights(verts[:, 0], names))
    if limit is not None:
        con = arm.pose.bones[names[1]].constraints.new("LIMIT_ROTATION")
        con.owner_space = "LOCAL"
        con.use_limit_x = True
        con.min_x, con.max_x = np.radians(limit[0]), np.radians(limit[1])
    sleeve_obj = None
    if sleeve is not None:
        sv, sf = _tube(0.6, 1.6, RADIUS * 1.4)
        sleeve_obj = bpy.data.objects.new(name + "Sleeve", mesh_from_arrays(name + "Sleeve", sv, sf))
        bpy.context.scene.collection.objects.link(sleeve_obj)
        if sleeve == "upper":
            add_weights(sleeve_obj, {names[0]: (np.arange(len(sv)), np.ones(len(sv)))})
        else:
            add_weights(sleeve_obj, _weights(sv[:, 0], names))
        sleeve_obj.parent = arm
        mod = sleeve_obj.modifiers.new("Armature", "ARMATURE")
        mod.object = arm
    if strap:
        sv, sf = _tube(-0.3, 0.3, 0.03)
        sv = sv[:, [1, 0, 2]] + [1.0, 0.0, 0.0]  # along Y through the joint
        sf = [f[::-1] for f in sf]
        sleeve_obj = bpy.data.objects.new(name + "Strap", mesh_from_arrays(name + "Strap", sv, sf))
        bpy.context.scene.collection.objects.link(sleeve_obj)
        add_weights(sleeve_obj, _weights(sv[:, 0], names))
        sleeve_obj.parent = arm
        sleeve_obj.modifiers.new("Armature", "ARMATURE").object = arm
    bpy.context.view_layer.update()
    return obj, arm, sleeve_obj
