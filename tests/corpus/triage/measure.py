# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent measurements behind the verdicts of the weight, bind-pose and rig findings.

    .venv/bin/python tests/corpus/triage/measure.py REPORT.json OUT.json [FILE...]

With FILE arguments only those files are measured and OUT.json keeps the others.

REPORT.json is the audit's JSON report over the corpus (``collect.py --json``); only its list
of WARNING/ERROR findings (file, object, code, flagged vertices and bones) is read.  Each file
is loaded into Blender once and every finding is measured with this script's own reading
of Blender's data: vertex groups one entry at a time, bone matrices, Blender's evaluated mesh
at poses set here.  No skin_audit code is used.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.corpus.triage.common import (  # noqa: E402
    REPO,
    armature_of,
    components,
    deform_columns,
    edges_of,
    load,
    own_weights,
    size_of,
    skinned,
    world_positions,
    write_json,
)

SIDE = re.compile(r"(?i)(\.|_|-)?(l|r|left|right)$")


def character_size(bpy) -> float:
    parts = [world_positions(bpy, m, evaluated=False) for m in skinned(bpy)]
    return size_of(np.concatenate(parts or [np.zeros((0, 3))]))


def weights_facts(obj) -> dict:
    names, w = own_weights(obj)
    cols = deform_columns(obj, names)
    d = w[:, cols] if len(cols) else np.zeros((len(w), 0))
    s = d.sum(axis=1)
    n_inf = (d > 0).sum(axis=1)
    srt = -np.sort(-d, axis=1)
    dropped = srt[:, 4:].sum(axis=1) / np.where(s > 0, s, 1)
    weighted = s > 1e-4
    return {
        "vertices": len(w),
        "sum_error_max": float(np.abs(s[weighted] - 1).max()) if weighted.any() else 0.0,
        "sum_off_1e-4": int((np.abs(s[weighted] - 1) > 1e-4).sum()),
        "sum_off_1e-2": int((np.abs(s[weighted] - 1) > 1e-2).sum()),
        "over_4": int((n_inf > 4).sum()),
        "max_influences": int(n_inf.max()) if len(n_inf) else 0,
        "dropped_fraction_max": float(dropped.max()) if len(dropped) else 0.0,
        "unweighted": int((~weighted).sum()),
    }


def turn_bone(bpy, arm, bone: str, degrees: float = 90.0) -> None:
    for pb in arm.pose.bones:
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = (0, 0, 0)
        pb.location = (0, 0, 0)
        pb.scale = (1, 1, 1)
    if bone:
        arm.pose.bones[bone].rotation_euler = (math.radians(degrees), 0, 0)
    bpy.context.view_layer.update()


def weld_edges(co: np.ndarray, size: float) -> np.ndarray:
    """Pairs of vertices at the same place (split seams of an imported mesh count as joined)."""
    keys = np.round(co / (1e-6 * max(size, 1e-12))).astype(np.int64)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    first = {}
    pairs = []
    for i, k in enumerate(inverse):
        if k in first:
            pairs.append((first[k], i))
        else:
            first[k] = i
    return np.array(pairs, dtype=int).reshape(-1, 2)


def turn_free(bpy, arm, bone: str) -> None:
    """Turn one bone 90 deg about X with every constraint muted (IK would hold it still)."""
    muted = [c for pb in arm.pose.bones for c in pb.constraints if not c.mute]
    for c in muted:
        c.mute = True
    turn_bone(bpy, arm, bone)
    return muted


def stray(bpy, obj, finding: dict, size: float) -> dict:
    """The flagged vertices of each flagged bone: their weight, whether they lie apart from the
    bone's main weighted region (vertices at one place welded), whether that region is a loose
    part weighted in full, and how far they move when the bone alone bends 90 deg."""
    names, w = own_weights(obj)
    n = len(w)
    edges = np.concatenate([edges_of(obj), weld_edges(np.array([v.co[:] for v in obj.data.vertices]), size)])
    loose = components(n, edges, np.ones(n, bool))
    flagged = np.zeros(n, bool)
    flagged[np.asarray(finding["vertices"], dtype=int)] = True
    arm = armature_of(obj)
    out = {"flagged_listed": int(flagged.sum()), "flagged_total": finding.get("vertices_total")}
    for bone in finding["bones"]:
        if bone not in names or bone not in arm.pose.bones:
            continue
        col = w[:, names.index(bone)]
        keep = col > 0
        comp = components(n, edges, keep)
        labels, counts = np.unique(comp[keep], return_counts=True)
        main = labels[counts.argmax()]
        mine = flagged & keep
        idx = np.flatnonzero(mine)
        # The bone's own pull on the flagged vertices as it bends 90 deg alone (closed form):
        # w_b / sum(w) * |(M_b - I) p| in the armature's frame, M_b its skinning matrix.
        muted = turn_free(bpy, arm, bone)
        pb = arm.pose.bones[bone]
        m_b = np.array(pb.matrix) @ np.linalg.inv(np.array(pb.bone.matrix_local))
        for c in muted:
            c.mute = False
        turn_bone(bpy, arm, "")
        to_arm = np.linalg.inv(np.array(arm.matrix_world)) @ np.array(obj.matrix_world)
        co = np.array([v.co[:] for v in obj.data.vertices])
        p_arm = co @ to_arm[:3, :3].T + to_arm[:3, 3]
        deform = deform_columns(obj, names)
        total = w[:, deform].sum(axis=1)
        share = np.divide(col, total, out=np.zeros_like(col), where=total > 0)
        scale = float(np.linalg.norm(np.array(arm.matrix_world)[:3, :3], axis=0).mean())
        moved = (p_arm @ m_b[:3, :3].T + m_b[:3, 3]) - p_arm
        move = share * np.linalg.norm(moved, axis=1) * scale
        apart = idx[comp[idx] != main]
        # A region that is the mirror image of another region of the same bone (two eyes on one
        # 'eyes' bone) is symmetry, not a bleed.
        others = np.flatnonzero(keep & ~flagged)
        mirrored_share = 0.0
        if len(idx) and len(others):
            mp = p_arm[idx] * np.array([-1.0, 1.0, 1.0])
            dd = np.linalg.norm(mp[:, None, :] - p_arm[others][None, :, :], axis=2).min(axis=1)
            mirrored_share = float((dd < 1e-3 * size / scale).mean())
        whole = [int(p) for p in np.unique(loose[idx]) if np.all(col[loose == p] > 0.999)]
        throughout = [int(p) for p in np.unique(loose[idx]) if np.all(col[loose == p] > 0) and (loose == p).sum() < n]
        out[bone] = {
            "flagged_vertices": len(idx),
            "apart_from_main_region": len(apart),
            "weight_max": float(col[idx].max()) if len(idx) else 0.0,
            "move_max": float(move[idx].max()) if len(idx) else 0.0,
            "move_relative": float(move[idx].max() / size) if len(idx) else 0.0,
            "in_fully_weighted_loose_parts": int(np.isin(loose[idx], whole).sum()),
            "in_loose_parts_weighted_throughout": int(np.isin(loose[idx], throughout).sum()),
            "main_region_vertices": int(counts.max()),
            "whole_region_flagged": bool(len(idx) == int(keep.sum())),
            "regions": len(labels),
            "flagged_mirroring_another_region": mirrored_share,
            "flagged_all_full_weight": bool(len(idx) and np.all(col[idx] >= 0.999)),
        }
    return out


def stray_counterfactual(bpy, obj, finding: dict, size: float) -> float:
    """How far the flagged weights move the flagged vertices, Blender's own evaluation: every deform
    bone turned 90 deg about its own X, then Y, then Z (constraints muted), the mesh evaluated with
    the flagged bones' weights on the flagged vertices and with them removed (one bone at a time),
    the largest distance over those vertices and the three poses, as a fraction of ``size``."""
    arm = armature_of(obj)
    flagged = [int(v) for v in finding["vertices"]]
    muted = [c for pb in arm.pose.bones for c in pb.constraints if not c.mute]
    for c in muted:
        c.mute = True
    saved = [(pb, pb.rotation_mode, tuple(pb.rotation_quaternion), tuple(pb.rotation_euler), tuple(pb.location),
              tuple(pb.scale)) for pb in arm.pose.bones]
    worst = 0.0
    try:
        for axis in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)):
            for pb in arm.pose.bones:
                pb.rotation_mode, pb.location, pb.scale = "QUATERNION", (0, 0, 0), (1, 1, 1)
                turned = pb.bone.use_deform
                h = math.radians(45.0)
                pb.rotation_quaternion = (math.cos(h), *(a * math.sin(h) for a in axis)) if turned else (1, 0, 0, 0)
            bpy.context.view_layer.update()
            with_weights = world_positions(bpy, obj)[flagged]
            for bone in finding["bones"]:
                group = obj.vertex_groups.get(bone)
                if group is None:
                    continue
                kept = []
                for v in flagged:
                    try:
                        kept.append((v, group.weight(v)))
                    except RuntimeError:  # not in the group
                        pass
                group.remove([v for v, _ in kept])
                bpy.context.view_layer.update()
                without = world_positions(bpy, obj)[flagged]
                for v, w in kept:
                    group.add([v], w, "REPLACE")
                bpy.context.view_layer.update()
                worst = max(worst, float(np.linalg.norm(with_weights - without, axis=1).max(initial=0.0)))
    finally:
        for pb, mode, q, e, loc, sc in saved:
            pb.rotation_mode, pb.rotation_quaternion, pb.rotation_euler, pb.location, pb.scale = mode, q, e, loc, sc
        for c in muted:
            c.mute = False
        bpy.context.view_layer.update()
    return worst / size


def mirror_pairs(arm) -> list[tuple[str, str]]:
    bones = {b.name for b in arm.data.bones if b.use_deform}
    pairs = []
    for b in sorted(bones):
        for left, right in ((".L", ".R"), ("_L", "_R"), ("Left", "Right"), ("_l", "_r"), (".l", ".r")):
            if left in b:
                other = b.replace(left, right)
                if other in bones:
                    pairs.append((b, other))
    return pairs


def mirror_angles(arm) -> dict:
    """Angle between each right bone's rest frame and its left partner's mirror image."""
    s = np.diag([-1.0, 1.0, 1.0])
    out = {}
    for left, right in mirror_pairs(arm):
        a = np.array(arm.data.bones[left].matrix_local)[:3, :3]
        b = np.array(arm.data.bones[right].matrix_local)[:3, :3]
        a /= np.linalg.norm(a, axis=0)
        b /= np.linalg.norm(b, axis=0)
        m = s @ a @ s
        ang = math.degrees(math.acos(max(-1.0, min(1.0, (np.trace(b.T @ m) - 1) / 2))))
        head_l = np.array(arm.data.bones[left].head_local)
        head_r = np.array(arm.data.bones[right].head_local)
        y = a[:, 1]
        out[f"{left}/{right}"] = {"angle": ang, "head_mirror_error": float(np.linalg.norm(s @ head_l - head_r)),
                                  "along_mirror_axis_deg": math.degrees(math.acos(min(1.0, abs(y[0]))))}
    return out


def mirror_pose_error(bpy, arm, meshes, pairs_angles: dict, size: float) -> float:
    """Pose every left bone 40 deg about X and its partner with the mirrored rotation (what
    Blender's Paste X-Flipped does: X stays, Y and Z negate); how far the right side's vertices
    land from the mirror image of the left side's, relative to the size."""
    for pb in arm.pose.bones:
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = (0, 0, 0)
    for key in pairs_angles:
        left, right = key.split("/")
        arm.pose.bones[left].rotation_euler = (math.radians(40), math.radians(20), math.radians(10))
        arm.pose.bones[right].rotation_euler = (math.radians(40), math.radians(-20), math.radians(-10))
    bpy.context.view_layer.update()
    to_arm = np.linalg.inv(np.array(arm.matrix_world))

    def in_arm(p: np.ndarray) -> np.ndarray:  # the mirror plane is the armature's own X = 0
        return p @ to_arm[:3, :3].T + to_arm[:3, 3]

    posed = in_arm(np.concatenate([world_positions(bpy, m) for m in meshes]))
    for pb in arm.pose.bones:
        pb.rotation_euler = (0, 0, 0)
    bpy.context.view_layer.update()
    rest = in_arm(np.concatenate([world_positions(bpy, m) for m in meshes]))
    size = size_of(rest)
    # Pair each vertex with its mirror at rest (within 1e-3 of the size), then compare when posed.
    m_rest = rest * np.array([-1.0, 1.0, 1.0])
    worst, pairs = 0.0, 0
    for s in range(0, len(rest), 1500):
        d = np.linalg.norm(rest[s:s + 1500, None, :] - m_rest[None, :, :], axis=2)
        j = d.argmin(axis=1)
        ok = d[np.arange(len(j)), j] < 5e-3 * size
        pairs += int(ok.sum())
        if ok.any():
            diff = np.linalg.norm(posed[s:s + 1500][ok] - posed[j[ok]] * np.array([-1.0, 1.0, 1.0]), axis=1)
            worst = max(worst, float(diff.max()))
    return worst / size, pairs


def asymmetry(obj, finding: dict, size: float, bpy) -> dict:
    """Own mirror pairing inside the mesh and with the named mirror object; weight differences."""
    det = finding.get("details", {})
    other = bpy.data.objects.get(det.get("mirror_object")) if det.get("mirror_object") else obj
    names, w = own_weights(obj)
    onames, ow = own_weights(other)
    p = world_positions(bpy, obj, evaluated=False)
    q = world_positions(bpy, other, evaluated=False) * np.array([-1.0, 1.0, 1.0])

    def swap(n: str) -> str:
        for a, b in ((".L", ".R"), ("_L", "_R"), ("Left", "Right"), (".l", ".r"), ("_l", "_r")):
            if a in n:
                return n.replace(a, b)
            if b in n:
                return n.replace(b, a)
        return n

    col = {n: i for i, n in enumerate(onames)}
    mirrored = np.zeros_like(w)
    d = np.linalg.norm(p[:, None, :] - q[None, :, :], axis=2)
    j = d.argmin(axis=1)
    near = d[np.arange(len(j)), j]
    paired = near < 1e-3 * size
    for gi, n in enumerate(names):
        k = col.get(swap(n))
        if k is not None:
            mirrored[:, gi] = ow[j, k]
    diff = np.abs(w - mirrored)[paired].max(axis=1) if paired.any() else np.zeros(0)
    return {"mirror_object": other.name, "paired": int(paired.sum()),
            "pairing_distance_max": float(near[paired].max()) if paired.any() else None, "vertices": len(w),
            "differ_over_0.05": int((diff > 0.05).sum()), "worst_difference": float(diff.max()) if len(diff) else 0.0}


def drift(bpy, obj, size: float) -> dict:
    """Pose channels cleared: how far Blender's evaluated mesh sits from the mesh as modelled."""
    arm = armature_of(obj)
    for pb in arm.pose.bones:
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = (0, 0, 0)
        pb.rotation_quaternion = (1, 0, 0, 0)
        pb.location = (0, 0, 0)
        pb.scale = (1, 1, 1)
    bpy.context.view_layer.update()
    ev = world_positions(bpy, obj)
    base = world_positions(bpy, obj, evaluated=False)
    held = []
    for pb in arm.pose.bones:
        m = np.array(pb.matrix) @ np.linalg.inv(np.array(pb.bone.matrix_local))
        if pb.bone.use_deform and np.abs(m - np.eye(4)).max() > 1e-4:
            held.append(pb.name)
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    at_rest = world_positions(bpy, obj)
    arm.data.pose_position = "POSE"
    bpy.context.view_layer.update()
    dmax = float(np.linalg.norm(ev - base, axis=1).max())
    return {"cleared_vs_modelled": dmax, "relative": dmax / size, "rest_position_vs_modelled":
            float(np.linalg.norm(at_rest - base, axis=1).max()), "deform_bones_held": held,
            "constraints": sorted({c.type for pb in arm.pose.bones for c in pb.constraints}),
            "mesh_drivers": [d.data_path for d in (obj.animation_data.drivers if obj.animation_data else [])],
            "shape_keys": bool(obj.data.shape_keys)}


def weighted_bones(meshes, bones) -> list[str]:
    """Which of ``bones`` carry a weight above 0 on any of the meshes (own reading)."""
    out = set()
    for m in meshes:
        names, w = own_weights(m)
        out |= {n for i, n in enumerate(names) if n in bones and (w[:, i] > 0).any()}
    return sorted(out)


def hand_bones(arm, meshes) -> dict:
    """What lies past each forearm: the bones below the lower arm, named or not (own reading)."""
    bones = arm.data.bones
    names = [b.name for b in bones]
    lower = [b for b in bones if re.search(r"(?i)(lower_?arm|fore_?arm|elbow)", b.name)]
    beyond = {b.name: [c.name for c in b.children_recursive] for b in lower}
    handlike = [n for n in names if re.search(r"(?i)(hand|wrist|palm|fist)", n)]
    children = {b.name: [c.name for c in b.children if c.use_deform] for b in lower}
    return {"bones": len(names), "lower_arms": sorted(beyond), "below_lower_arms": beyond,
            "deform_children_of_lower_arms": children,
            "hand_like_names": handlike, "weighted_below_lower_arms":
            weighted_bones(meshes, [c for v in beyond.values() for c in v])}


def measure_file(bpy, path: str, items: list[tuple[str, str, dict]]) -> dict:
    load(bpy, REPO / path)
    size = character_size(bpy)
    out: dict = {"size": size}
    for obj_name, code, finding in items:
        key = f"{obj_name} :: {code}"
        try:
            if obj_name.startswith("armature:"):
                arm = bpy.data.objects[obj_name.split(":", 1)[1]]
                meshes = [m for m in skinned(bpy) if armature_of(m) is arm]
                if code == "mirror-axis-mismatch":
                    angles = mirror_angles(arm)
                    flagged = {k: v for k, v in angles.items() if set(k.split("/")) <= set(finding["bones"])}
                    err, vertex_pairs = mirror_pose_error(bpy, arm, meshes, flagged, size)
                    out[key] = {"pairs": len(angles), "flagged": flagged,
                                "worst_angle": max((v["angle"] for v in flagged.values()), default=0.0),
                                "mirrored_pose_error_relative": err, "mirror_vertex_pairs": vertex_pairs,
                                "flagged_bones_with_weights": weighted_bones(meshes, finding["bones"])}
                elif code == "multiple-root-bones":
                    deform = [b for b in arm.data.bones if b.use_deform]

                    def deform_parent(b):
                        p = b.parent
                        while p is not None and not p.use_deform:
                            p = p.parent
                        return p
                    roots = [b.name for b in deform if deform_parent(b) is None]
                    weighted = set()
                    for m in meshes:
                        names, w = own_weights(m)
                        weighted |= {n for i, n in enumerate(names) if (w[:, i] > 0).any()}
                    out[key] = {"roots": roots, "roots_with_weights": [r for r in roots if r in weighted]}
                elif code == "unpaired-side-bone":
                    bones = {b.name: np.array(b.head_local) for b in arm.data.bones if b.use_deform}
                    flagged = finding["bones"]
                    sides = {n: ("L" if re.search(r"(?i)(\.l|_l|left)", n) else "R") for n in flagged}
                    other = [n for n in bones if n not in flagged]
                    out[key] = {"flagged": flagged, "heads_x": {n: float(bones[n][0]) for n in flagged if n in bones},
                                "all_deform_bones_flagged": not other, "sides": sorted(set(sides.values()))}
                elif code == "humanoid-bone-missing":
                    out[key] = hand_bones(arm, meshes)
                elif code == "armature-modifier-missing":
                    info = {}
                    for o in bpy.data.objects:
                        named = any(g.name in arm.data.bones for g in o.vertex_groups)
                        if o.type == "MESH" and armature_of(o) is None and named:
                            users = [u.name for u in bpy.data.objects if u.data is o.data and u is not o]
                            info[o.name] = {"parent": o.parent.name if o.parent else None, "parent_type": o.parent_type,
                                            "shares_data_with": users,
                                            "shares_with_skinned": any(armature_of(bpy.data.objects[u]) for u in users)}
                    out[key] = info
                continue
            obj = bpy.data.objects[obj_name]
            if code in ("weights-not-normalized", "too-many-influences", "unweighted-vertices"):
                out[key] = weights_facts(obj)
            elif code == "stray-weights":
                out[key] = stray(bpy, obj, finding, size)
                out[key]["counterfactual_relative"] = stray_counterfactual(bpy, obj, finding, size)
            elif code == "weight-asymmetry":
                out[key] = asymmetry(obj, finding, size, bpy)
            elif code == "bind-pose-drift":
                out[key] = drift(bpy, obj, size)
            elif code == "group-without-bone":
                names, w = own_weights(obj)
                cols = deform_columns(obj, names)
                other = w[:, cols].sum(axis=1)
                res = {}
                for g in finding["groups"]:
                    gi = names.index(g)
                    v = w[:, gi] > 0
                    res[g] = {"vertices": int(v.sum()), "weight_max": float(w[v, gi].max()),
                              "other_deform_weight_min": float(other[v].min()),
                              "vertices_left_unweighted": int((other[v] <= 1e-4).sum())}
                out[key] = res
            elif code == "mesh-not-parented-to-armature":
                out[key] = {"parent": obj.parent.name if obj.parent else None,
                            "armature": armature_of(obj).name}
        except Exception as exc:  # one finding the script cannot measure is recorded, the rest go on
            out[key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out


def main(argv: list[str]) -> None:
    import bpy

    report = json.loads(Path(argv[0]).read_text())
    out_path = Path(argv[1])
    by_file: dict[str, list] = {}
    for f in report["files"]:
        for rig in f.get("rigs", []):
            for g in rig["findings"]:
                if g["severity"] in ("WARNING", "ERROR"):
                    by_file.setdefault(f["path"], []).append((f"armature:{rig['armature']}", g["code"], g))
        for m in f.get("meshes", []):
            for g in m["findings"]:
                # (stray weights at INFO too: their verdict says whether INFO was right)
                if (g["severity"] in ("WARNING", "ERROR") or g["code"] == "stray-weights") \
                        and g["code"] != "engine-divergence":
                    by_file.setdefault(f["path"], []).append((m["object"], g["code"], g))
    only = set(argv[2:])  # measure these files only, kept beside the others already measured
    results = json.loads(out_path.read_text()) if only and out_path.exists() else {}
    for path, items in sorted(by_file.items()):
        if only and path not in only:
            continue
        seen, unique = set(), []
        for it in items:
            if (it[0], it[1]) not in seen:
                seen.add((it[0], it[1]))
                unique.append(it)
        results[path] = measure_file(bpy, path, unique)
        print(path, flush=True)
    write_json(out_path, results)


if __name__ == "__main__":
    main(sys.argv[1:])
