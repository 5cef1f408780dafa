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


def g(x: float) -> str:
    return f"{x:.3g}"


def engine_at(engine: dict, path: str, obj: str) -> tuple[float, float, dict] | None:
    e = engine.get(path, {})
    if e.get("mode") == "export":
        m = e["meshes"].get(obj)
        return (m["relative"], m["max"], m) if m else None
    if e.get("mode") == "file":
        worst = max(e["by_time"], key=lambda t: t["relative"])
        return worst["relative"], max(worst["three_to_blender"], worst["blender_to_three"]), worst
    return None


def judge(path: str, obj: str, code: str, meas: dict, engine: dict) -> tuple[str, str, str, str]:
    m = meas.get(path, {}).get(f"{obj} :: {code}", {})
    size = meas.get(path, {}).get("size") or engine.get(path, {}).get("size")
    eng = engine_at(engine, path, obj)
    if code == "file-error":
        return ("false", "Blender imports the Draco-compressed file (3572 vertices, 19 groups); the audit refuses it whole",
                "Blender 5.0.1 import: 1 skinned mesh, 3572 vertices", "bpy.ops.import_scene.gltf")
    if code in ("engine-divergence", "too-many-influences") and eng:
        rel, dist, _ = eng
        how = ("three.js on the file vs Blender's import, nearest-vertex distance" if engine[path]["mode"] == "file"
               else "Blender + its glTF exporter + three.js vs Blender, 45/30-deg pose")
        extra = f"; weight dropped by keeping 4: up to {g(m['dropped_fraction_max'])}" if code == "too-many-influences" else ""
        verdict = "true" if rel >= VISIBLE_RELATIVE else "noise"
        return (verdict, f"three.js draws it {g(dist)} ({g(rel)} of the size) from Blender"
                + (" (visible)" if verdict == "true" else ", under a pixel at full-view size") + extra,
                f"{g(rel)} of size", f"triage/engine_check.py ({how})")
    if code == "weights-not-normalized" and eng:
        _, _, e = eng
        exported = e.get("exported_sum_error")
        if exported is not None and exported < 1e-3:
            return ("noise", f"own sums off by up to {g(m['sum_error_max'])}, but Blender normalises and its glTF exporter "
                    f"writes sums within {g(exported)} of 1, which three.js draws as Blender does",
                    f"stored {g(m['sum_error_max'])}, exported {g(exported)}", "triage/measure.py + triage/engine_check.py")
        return ("true", f"exported sums still off by {g(exported)}", f"exported {g(exported)}", "triage/engine_check.py")
    if code == "unweighted-vertices":
        return ("true", f"{m['unweighted']} vertex with no deform weight (own reading): Blender leaves it behind when the "
                "rig moves", f"{m['unweighted']} vertex", "triage/measure.py")
    if code == "stray-weights":
        bones = {k: v for k, v in m.items() if isinstance(v, dict)}
        apart = sum(v["apart_from_main_region"] for v in bones.values())
        moving = max((v["move_relative"] for v in bones.values() if v["apart_from_main_region"]), default=0.0)
        wmax = max((v["weight_max"] for v in bones.values()), default=0.0)
        whole = sum(v["in_fully_weighted_loose_parts"] for v in bones.values())
        if not apart:
            return ("false", "the flagged vertices are joined to their bone's main weighted region (own islands, "
                    "coincident vertices welded)", "0 vertices apart", "triage/measure.py")
        if whole >= apart:
            return ("false", "the islands are loose parts weighted in full to the bone, as meant", f"{whole} in loose parts",
                    "triage/measure.py")
        verdict = "true" if moving >= STRAY_VISIBLE_RELATIVE else "noise"
        return (verdict, f"{apart} vertices apart from their bone's region, weight up to {g(wmax)}, moving {g(moving)} of "
                f"the size when the bone bends 90 deg" + (" (visible)" if verdict == "true" else " (under 1%)"),
                f"{g(moving)} of size", "triage/measure.py")
    if code == "weight-asymmetry":
        if not m.get("paired"):
            return ("false", f"no vertex of '{obj}' has a mirror vertex in '{m.get('mirror_object')}' within 1e-3 of the "
                    "size: the meshes do not mirror each other", "0 pairs", "triage/measure.py")
        verdict = "true" if m["worst_difference"] >= ASYMMETRY_VISIBLE else "noise"
        return (verdict, f"{m['differ_over_0.05']} of {m['paired']} mirror pairs (own pairing with '{m['mirror_object']}') "
                f"differ by > 0.05, worst {g(m['worst_difference'])}", f"worst {g(m['worst_difference'])}",
                "triage/measure.py")
    if code == "mirror-axis-mismatch":
        if m["worst_angle"] < 1.0:
            return ("false", f"own rest frames of the named pairs mirror within {g(m['worst_angle'])} deg",
                    f"{g(m['worst_angle'])} deg", "triage/measure.py")
        err = m["mirrored_pose_error_relative"]
        verdict = "true" if err >= MIRROR_POSE_VISIBLE else "noise"
        return (verdict, f"worst pair {g(m['worst_angle'])} deg off its mirror; mirrored rotations put the two sides "
                f"{g(err)} of the size apart", f"{g(err)} of size", "triage/measure.py")
    if code == "bind-pose-drift":
        if not m.get("deform_bones_held") and m.get("cleared_vs_modelled", 1) < 1e-6:
            return ("false", "with pose channels cleared the mesh sits on the modelled mesh (0.0); the drift at Rest "
                    "Position comes from a shape key driven by the bone ('var + 0.0'), not from the bind pose",
                    f"{g(m['cleared_vs_modelled'])}", "triage/measure.py")
        verdict = "true" if m["relative"] >= VISIBLE_RELATIVE else "noise"
        return (verdict, f"IK constraints hold {len(m['deform_bones_held'])} deform bones off rest with the pose cleared, "
                f"moving the mesh {g(m['cleared_vs_modelled'])} ({g(m['relative'])} of the size)",
                f"{g(m['relative'])} of size", "triage/measure.py")
    if code == "group-without-bone":
        worst = min(v["other_deform_weight_min"] for v in m.values())
        left = sum(v["vertices_left_unweighted"] for v in m.values())
        if left == 0 and worst >= 0.95:
            return ("noise", f"Blender and its exporter ignore the group; its vertices keep deform weight >= {g(worst)} "
                    "from bone groups: nothing drawn changes", f"min other weight {g(worst)}", "triage/measure.py")
        return ("true", f"{left} vertices depend on the group", f"{left} vertices", "triage/measure.py")
    if code == "armature-modifier-missing":
        inst = [k for k, v in m.items() if v["parent"] is None and v["shares_with_skinned"]]
        if len(inst) == len(m):
            return ("noise", f"{len(inst)} unparented objects share the mesh datablock of a skinned mesh: static instances, "
                    "nothing to add", f"{len(inst)} instances", "triage/measure.py")
    if code == "mesh-not-parented-to-armature":
        return ("noise", "unparented skinned mesh: Blender deforms it and its glTF exporter writes the skin (this scene is "
                "the exporter's own test of that case); nothing drawn changes", "parent None", "triage/measure.py")
    if code == "multiple-root-bones":
        rel = eng[0] if eng else None
        return ("noise", f"{len(m['roots'])} deform roots; a glTF skin needs no common root and three.js draws the file as "
                f"Blender does ({g(rel) if rel is not None else 'n/a'} of the size)", f"{len(m['roots'])} roots",
                "triage/measure.py + triage/engine_check.py")
    if code == "unpaired-side-bone":
        if m.get("all_deform_bones_flagged") and len(m.get("sides", [])) == 1:
            return ("noise", "a one-sided asset (every deform bone is on one side): nothing to pair",
                    f"{len(m['flagged'])} bones, one side", "triage/measure.py")
        xs = m.get("heads_x", {})
        if len({x > 0 for x in xs.values()}) == 2:
            return ("true", f"the unpaired bones sit on both sides (head x {', '.join(g(x) for x in xs.values())}): one is "
                    "misnamed, mirroring tools will not pair it", "heads on both sides", "triage/measure.py")
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
