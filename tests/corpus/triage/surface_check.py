# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent measurement behind the verdicts of the surface and weight-step findings.

    .venv/bin/python tests/corpus/triage/surface_check.py FILE OBJECT BONE AXIS DEGREES VERTEX...

Loads FILE into Blender (common.load), takes OBJECT's triangles whose three corners are among
the VERTEX indices (a finding's vertices), and prints, as JSON, the largest stretch of those
triangles (the largest singular value of the 3x2 map from the rest triangle to the posed one,
by numpy's SVD of that map, solved here with lstsq) and the smallest cosine between a posed face
normal and its rest normal turned by the rotation of the bone weighing most on it (Blender's
pose matrices), measured on Blender's evaluated mesh:

- with BONE turned by DEGREES about its local AXIS (the finding's pose), and by a third of that;
- over every frame (step 2) of every action in the file, played on the armature as the file has
  it: what the asset's own animation shows.

No skin_audit code is used.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.corpus.triage.common import REPO, armature_of, load, own_weights, world_positions  # noqa: E402


def triangles_of(obj) -> np.ndarray:
    obj.data.calc_loop_triangles()
    return np.array([t.vertices[:] for t in obj.data.loop_triangles], dtype=int).reshape(-1, 3)


def stretch(rest: np.ndarray, posed: np.ndarray) -> np.ndarray:
    """Largest singular value of each triangle's map from its rest plane to its posed edges."""
    out = np.zeros(len(rest))
    for k, (r, p) in enumerate(zip(rest, posed, strict=True)):
        e = np.stack([r[1] - r[0], r[2] - r[0]], axis=1)  # (3, 2)
        f = np.stack([p[1] - p[0], p[2] - p[0]], axis=1)
        q, _ = np.linalg.qr(e)  # orthonormal basis of the rest plane
        coords = q.T @ e  # (2, 2) rest edges in that basis
        m = np.linalg.lstsq(coords.T, f.T, rcond=None)[0].T  # (3, 2): m @ coords = f
        out[k] = np.linalg.svd(m, compute_uv=False)[0]
    return out


def normals(points: np.ndarray) -> np.ndarray:
    n = np.cross(points[:, 1] - points[:, 0], points[:, 2] - points[:, 0])
    return n / np.maximum(np.linalg.norm(n, axis=1), 1e-30)[:, None]


def fold(arm, obj, tri: np.ndarray, rest: np.ndarray, posed: np.ndarray, heaviest: list[str]) -> float:
    """Smallest cosine between a posed face normal and its rest normal turned by the world rotation
    of the bone weighing most on its corners (Blender's pose matrices read here)."""
    out = 1.0
    rn, pn = normals(rest), normals(posed)
    aw = np.array(arm.matrix_world)
    for k, name in enumerate(heaviest):
        pb, b = arm.pose.bones[name], arm.data.bones[name]
        turn = aw @ np.array(pb.matrix) @ np.linalg.inv(np.array(b.matrix_local)) @ np.linalg.inv(aw)
        u, _, vt = np.linalg.svd(turn[:3, :3])
        out = min(out, float(pn[k] @ (u @ vt @ rn[k])))
    return out


def main(argv: list[str]) -> None:
    import bpy

    path, name, bone, axis, degrees = argv[0], argv[1], argv[2], argv[3], float(argv[4])
    listed = {int(v) for v in argv[5:]}
    load(bpy, REPO / path)
    obj = bpy.data.objects[name]
    arm = armature_of(obj)
    tri = triangles_of(obj)
    tri = tri[np.array([set(t.tolist()) <= listed for t in tri], dtype=bool)]
    rest = world_positions(bpy, obj, evaluated=False)[tri]
    result: dict[str, object] = {"triangles": len(tri)}
    names, w = own_weights(obj)
    bones = {b.name for b in arm.data.bones if b.use_deform}
    columns = [i for i, n in enumerate(names) if n in bones]
    heaviest = [names[columns[int(np.argmax(w[t][:, columns].sum(axis=0)))]] for t in tri]
    saved = arm.animation_data.action if arm.animation_data else None
    if arm.animation_data:
        arm.animation_data.action = None
    for share in (1.0, 1.0 / 3.0):
        for pb in arm.pose.bones:
            pb.rotation_mode = "XYZ"
            pb.rotation_euler = (0, 0, 0)
            pb.location = (0, 0, 0)
            pb.scale = (1, 1, 1)
        angles = [0.0, 0.0, 0.0]
        angles["xyz".index(axis)] = math.radians(degrees * share)
        arm.pose.bones[bone].rotation_euler = angles
        bpy.context.view_layer.update()
        posed = world_positions(bpy, obj)[tri]
        result[f"stretch_at_{degrees * share:g}_deg"] = float(stretch(rest, posed).max(initial=1.0))
        result[f"fold_cosine_at_{degrees * share:g}_deg"] = fold(arm, obj, tri, rest, posed, heaviest)
    worst, where, least, least_where = 1.0, "", 1.0, ""
    for action in bpy.data.actions:
        if arm.animation_data is None:
            arm.animation_data_create()
        arm.animation_data.action = action
        if hasattr(arm.animation_data, "action_slot") and action.slots:
            arm.animation_data.action_slot = action.slots[0]
        start, end = (int(x) for x in action.frame_range)
        for frame in range(start, end + 1, 2):
            bpy.context.scene.frame_set(frame)
            posed = world_positions(bpy, obj)[tri]
            s = float(stretch(rest, posed).max(initial=1.0))
            if s > worst:
                worst, where = s, f"{action.name} frame {frame}"
            c = fold(arm, obj, tri, rest, posed, heaviest)
            if c < least:
                least, least_where = c, f"{action.name} frame {frame}"
    if arm.animation_data:
        arm.animation_data.action = saved
    result["stretch_in_own_actions"] = worst
    result["worst_frame"] = where
    result["fold_cosine_in_own_actions"] = least
    result["least_fold_frame"] = least_where
    result["actions"] = len(bpy.data.actions)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
