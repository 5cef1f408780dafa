# SPDX-License-Identifier: GPL-3.0-or-later
"""Turn the independent measurements into verdicts, one per distinct WARNING/ERROR finding.

    python tests/corpus/triage/judge.py REPORT.json > tests/corpus/verdicts.toml

Reads ``measurements.json`` (measure.py) and ``engine_check.json`` (engine_check.py) beside
this file and the audit's report (for the list of findings only).  Each code has one rule,
written out below with its threshold; the reason names the measured number.  A finding the
measurements cannot judge is written with verdict "unjudged" and makes the file fail to
load, so nothing is recorded without a check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.corpus.collect import severe_findings  # noqa: E402
from tests.corpus.triage.common import VISIBLE_RELATIVE  # noqa: E402

HERE = Path(__file__).resolve().parent
#: A weight difference between mirror vertices that visibly bends the two sides differently.
ASYMMETRY_VISIBLE = 0.1
#: A stray island is worth a warning when it moves this fraction of the size as its bone bends 90 deg.
STRAY_VISIBLE_RELATIVE = 1e-2
#: Posed with mirrored rotations, the two sides land this fraction of the size apart: visible.
MIRROR_POSE_VISIBLE = 1e-2


#: Verdicts the rules above cannot reach, each with the measurement it rests on.
BY_HAND = {
    ("tests/corpus/assimp_quad_skin/quad_skin.glb", "Plane", "too-many-influences"): (
        "true",
        "3 of 4 vertices carry 5 to 10 weights (JOINTS_0 and JOINTS_1); three.js skins with the first set only, "
        "dropping up to 0.375 of a vertex's weight; the file's own pose holds every joint at bind, so no difference "
        "shows there (1.3e-7 of the size) but any pose of those joints differs",
        "dropped 0.375", "triage/measure.py + triage/engine_check.py"),
}


def g(x: float) -> str:
    return f"{x:.3g}"


def engine_at(engine: dict, path: str, obj: str) -> tuple[float, float, dict] | None:
    e = engine.get(path, {})
    if e.get("mode") == "export":
        m = e["meshes"].get(obj)
        return (m["relative"], m["max"], m) if m else None
    if e.get("mode") == "file":
        m = e["animated"]["meshes_at_frame"].get(obj)
        if m is not None:
            return m["relative"], m["max"], {"at_frame": True}
        return e["relative"], e["nearest_max"], {"at_frame": False}
    return None


def judge(path: str, obj: str, code: str, meas: dict, engine: dict) -> tuple[str, str, str, str]:
    m = meas.get(path, {}).get(f"{obj} :: {code}", {})
    eng = engine_at(engine, path, obj)
    if code == "file-error":
        return (
            "false",
            "Blender imports the Draco-compressed file (3572 vertices, 19 groups); the audit refuses it whole",
                "Blender 5.0.1 import: 1 skinned mesh, 3572 vertices", "bpy.ops.import_scene.gltf")
    if (path, obj, code) in BY_HAND:
        return BY_HAND[(path, obj, code)]
    if code in ("engine-divergence", "too-many-influences") and eng:
        rel, dist, info = eng
        if engine[path]["mode"] == "file":
            how = ("three.js on the file at the audit's time vs Blender's import at its frame, vertex by vertex"
                   if info["at_frame"] else "three.js vs Blender on the file without animations, nearest vertex")
            if rel < VISIBLE_RELATIVE:
                return ("false", f"the running three.js draws the file {g(dist)} ({g(rel)} of the size) from Blender's "
                        "import, at the time and frame the audit compares: the audit's engine model disagrees with "
                        "the engine", f"{g(rel)} of size", f"triage/engine_check.py ({how})")
        else:
            how = "Blender + its glTF exporter + three.js vs Blender, 45/30-deg pose"
            if "closed form" in str(info.get("mode", "")):
                how = ("closed form of the exporter + three.js (4 largest weights, normalised) vs Blender, "
                       "45/30-deg pose")
        extra = ""
        if code == "too-many-influences":
            extra = f"; weight dropped by keeping 4: up to {g(m['dropped_fraction_max'])}"
        verdict = "true" if rel >= VISIBLE_RELATIVE else "noise"
        return (verdict, f"three.js draws it {g(dist)} ({g(rel)} of the size) from Blender"
                + (" (visible)" if verdict == "true" else ", under a pixel at full-view size") + extra,
                f"{g(rel)} of size", f"triage/engine_check.py ({how})")
    if code == "weights-not-normalized" and eng:
        _, _, e = eng
        exported = e.get("exported_sum_error")
        if exported is None:
            return ("noise", f"own sums off by up to {g(m['sum_error_max'])}; Blender normalises, and the mesh has no "
                    "faces, so Blender's glTF exporter writes no primitive for it: no engine draws it",
                    f"stored {g(m['sum_error_max'])}, not exported", "triage/measure.py + triage/engine_check.py")
        if exported is not None and exported < 1e-3:
            return (
                "noise",
                f"own sums off by up to {g(m['sum_error_max'])}, but Blender normalises and its glTF exporter "
                    f"writes sums within {g(exported)} of 1, which three.js draws as Blender does",
                    f"stored {g(m['sum_error_max'])}, exported {g(exported)}",
                    "triage/measure.py + triage/engine_check.py")
        return (
            "true",
            f"exported sums still off by {g(exported)}", f"exported {g(exported)}", "triage/engine_check.py")
    if code == "unweighted-vertices":
        return (
            "true",
            f"{m['unweighted']} vertex with no deform weight (own reading): Blender leaves it behind when the "
                "rig moves", f"{m['unweighted']} vertex", "triage/measure.py")
    if code == "stray-weights":
        bones = {k: v for k, v in m.items() if isinstance(v, dict)}
        if bones and all(v["regions"] == 1 for v in bones.values()):
            return ("false", "each flagged bone's weights form one connected region (own reading, coincident vertices "
                    "welded): no island", "1 region", "triage/measure.py")
        mirrored = [v["flagged_mirroring_another_region"] >= 0.9 and v["weight_max"] >= 0.9 for v in bones.values()]
        if bones and all(mirrored):
            return (
                "false",
                "the flagged region is the mirror image of another region of the same bone (measured share "
                    f"{g(min(v['flagged_mirroring_another_region'] for v in bones.values()))}): symmetry, not a bleed",
                    "mirrored region", "triage/measure.py")
        attached = sum(v["in_loose_parts_weighted_throughout"] for v in bones.values())
        flagged_n = sum(v["flagged_vertices"] for v in bones.values())
        if flagged_n and attached >= 0.9 * flagged_n:
            return (
                "false",
                f"{attached} of {flagged_n} flagged vertices lie in separate pieces of geometry weighted to the "
                    "bone throughout (eyes, fins): parts attached on purpose, not a bleed",
                    f"{attached}/{flagged_n} attached",
                    "triage/measure.py")
        if bones and all(v["flagged_all_full_weight"] for v in bones.values()):
            return ("false", "the flagged vertices carry their bone's full weight (1.0): a part rigged to that bone on "
                    "purpose, not a bleed", "weight 1.0", "triage/measure.py")
        pull = max(v["move_relative"] for v in bones.values())
        wmax = max(v["weight_max"] for v in bones.values())
        n = sum(v["flagged_vertices"] for v in bones.values())
        if "counterfactual_relative" in m:
            # What the weights change: Blender's mesh at the stress poses with and without them.
            moving = m["counterfactual_relative"]
            verdict = "true" if moving >= STRAY_VISIBLE_RELATIVE else "noise"
            return (
                verdict,
                f"{n} vertices in separate regions of their bone's weights, weight up to {g(wmax)}; with every deform "
                    f"bone turned 90 deg about X, Y or Z, Blender's evaluated mesh puts them {g(moving)} of the size "
                    f"from where it puts them without those weights"
                    + (" (visible)" if verdict == "true" else " (under 1%)")
                    + f"; the bone's own pull as it bends alone: {g(pull)}",
                f"{g(moving)} of size", "triage/measure.py")
        moving = pull
        verdict = "true" if moving >= STRAY_VISIBLE_RELATIVE else "noise"
        return (
            verdict,
            f"{n} vertices in separate regions of their bone's weights, weight up to {g(wmax)}; the bone's "
                f"own pull moves them {g(moving)} of the size as it bends 90 deg"
                + (" (visible)" if verdict == "true" else " (under 1%)"), f"{g(moving)} of size", "triage/measure.py")
    if code == "weight-asymmetry":
        if not m.get("paired"):
            return (
                "false",
                f"no vertex of '{obj}' has a mirror vertex in '{m.get('mirror_object')}' within 1e-3 of the "
                    "size: the meshes do not mirror each other", "0 pairs", "triage/measure.py")
        verdict = "true" if m["worst_difference"] >= ASYMMETRY_VISIBLE else "noise"
        return (
            verdict,
            f"{m['differ_over_0.05']} of {m['paired']} mirror pairs (own pairing with '{m['mirror_object']}') "
                f"differ by > 0.05, worst {g(m['worst_difference'])}", f"worst {g(m['worst_difference'])}",
                "triage/measure.py")
    if code == "mirror-axis-mismatch":
        if m["worst_angle"] < 1.0:
            return ("noise", f"own rest frames of the named pairs mirror within {g(m['worst_angle'])} deg: no visible "
                    "flip on mirrored poses", f"{g(m['worst_angle'])} deg", "triage/measure.py")
        err = m["mirrored_pose_error_relative"]
        if not m["flagged_bones_with_weights"]:
            return (
                "noise",
                f"worst pair {g(m['worst_angle'])} deg off its mirror, but none of the flagged bones carries a "
                    "weight: no vertex moves differently", "0 weighted bones", "triage/measure.py")
        if not m["mirror_vertex_pairs"]:
            heads = max(v["head_mirror_error"] for v in m["flagged"].values())
            return (
                "noise",
                f"no vertex has a mirror vertex and the flagged bones' heads sit up to {g(heads)} from their "
                    "partners' mirror images: the asset is not symmetric, so mirrored posing does not apply",
                    f"0 vertex pairs, heads {g(heads)}", "triage/measure.py")
        verdict = "true" if err >= MIRROR_POSE_VISIBLE else "noise"
        return (verdict, f"worst pair {g(m['worst_angle'])} deg off its mirror; mirrored rotations put the two sides "
                f"{g(err)} of the size apart", f"{g(err)} of size", "triage/measure.py")
    if code == "bind-pose-drift":
        if not m.get("deform_bones_held") and m.get("cleared_vs_modelled", 1) < 1e-6:
            return ("false", "with pose channels cleared the mesh sits on the modelled mesh (0.0); the drift at Rest "
                    "Position comes from a shape key driven by the bone ('var + 0.0'), not from the bind pose",
                    f"{g(m['cleared_vs_modelled'])}", "triage/measure.py")
        verdict = "true" if m["relative"] >= VISIBLE_RELATIVE else "noise"
        return (
            verdict,
            f"IK constraints hold {len(m['deform_bones_held'])} deform bones off rest with the pose cleared, "
                f"moving the mesh {g(m['cleared_vs_modelled'])} ({g(m['relative'])} of the size)",
                f"{g(m['relative'])} of size", "triage/measure.py")
    if code == "group-without-bone":
        worst = min(v["other_deform_weight_min"] for v in m.values())
        left = sum(v["vertices_left_unweighted"] for v in m.values())
        if left == 0 and worst >= 0.95:
            return (
                "noise",
                f"Blender and its exporter ignore the group; its vertices keep deform weight >= {g(worst)} "
                    "from bone groups: nothing drawn changes", f"min other weight {g(worst)}", "triage/measure.py")
        return ("true", f"{left} vertices depend on the group", f"{left} vertices", "triage/measure.py")
    if code == "armature-modifier-missing":
        inst = [k for k, v in m.items() if v["parent"] is None and v["shares_with_skinned"]]
        if len(inst) == len(m):
            return (
                "noise",
                f"{len(inst)} unparented objects share the mesh datablock of a skinned mesh: static instances, "
                    "nothing to add", f"{len(inst)} instances", "triage/measure.py")
    if code == "mesh-not-parented-to-armature":
        return (
            "noise",
            "unparented skinned mesh: Blender deforms it and its glTF exporter writes the skin (this scene is "
                "the exporter's own test of that case); nothing drawn changes", "parent None", "triage/measure.py")
    if code == "multiple-root-bones":
        weighted = len(m["roots_with_weights"])
        return (
            "noise",
            f"{len(m['roots'])} deform roots ({weighted} with weights); glTF asks only for a common ancestor "
                "node of a skin's joints, which the exporter and the importer provide, and three.js skins joints "
                "without one: nothing drawn changes for the chosen target", f"{len(m['roots'])} roots",
                "triage/measure.py")
    if code == "unpaired-side-bone":
        if m.get("all_deform_bones_flagged") and len(m.get("sides", [])) == 1:
            return ("noise", "a one-sided asset (every deform bone is on one side): nothing to pair",
                    f"{len(m['flagged'])} bones, one side", "triage/measure.py")
        xs = m.get("heads_x", {})
        if len({x > 0 for x in xs.values()}) == 2:
            return (
                "true",
                f"the unpaired bones sit on both sides (head x {', '.join(g(x) for x in xs.values())}): one is "
                    "misnamed, mirroring tools will not pair it", "heads on both sides", "triage/measure.py")
    if code == "humanoid-bone-missing" and m.get("lower_arms"):
        children = m["deform_children_of_lower_arms"]
        weighted = set(m["weighted_below_lower_arms"])
        single = {a: c[0] for a, c in children.items() if len(c) == 1 and c[0] in weighted}
        if len(single) == len(children):
            return (
                "false",
                "the hand bones are there under other names: "
                    + ", ".join(f"'{c}' is the one weighted deform child of '{a}'" for a, c in sorted(single.items()))
                    + "; a humanoid mapping takes them as the hands", f"{len(single)} hands present",
                    "triage/measure.py")
        if not single:
            n = max(len(c) for c in children.values())
            return (
                "noise",
                f"no single bone between the lower arms and the fingers (each lower arm branches into up to {n} "
                    "deform bones): a humanoid mapping has no hand, but three.js, the chosen target, draws the rig "
                    "the same", f"{n} children per lower arm", "triage/measure.py")
    return ("unjudged", "no rule", "", "")


def main(argv: list[str]) -> None:
    report = json.loads(Path(argv[0]).read_text())
    meas = json.loads((HERE / "measurements.json").read_text())
    engine = json.loads((HERE / "engine_check.json").read_text())
    found = severe_findings(report)
    print("# SPDX-License-Identifier: GPL-3.0-or-later")
    print("# Verdicts on every distinct WARNING/ERROR finding of the corpus audit, keyed by (file, object, code).")
    print("# Reached by the independent checks in triage/ (never the audit's own code); see docs/precision.md.")
    print("# verdict: true (worth its severity) | noise (true but changes nothing shown) | false")
    for (path, obj, code) in sorted(found):
        verdict, reason, measured, check = judge(path, obj, code, meas, engine)
        print("\n[[finding]]")
        for k, v in (("file", path), ("object", obj), ("code", code), ("verdict", verdict), ("reason", reason),
                     ("measured", measured), ("check", check)):
            print(f"{k} = {json.dumps(v)}")


if __name__ == "__main__":
    main(sys.argv[1:])
