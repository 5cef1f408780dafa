# SPDX-License-Identifier: GPL-3.0-or-later
"""The report keys docs/report-format.md and docs/report.schema.json document, read back from
what the audit returns, with hand values: the action timeline, engine-target details, mesh and
sweep metrics, the skeleton groups, cross-file skeletons with two files, SARIF properties."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.animation import action_findings
from skin_audit.core.audit.engine_target import PreparedTarget, explain_non_deform, judge_unnormalised
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.engines.divergence import divergence_finding
from skin_audit.core.engines.targets import GLTF, THREEJS
from skin_audit.core.findings import Finding
from skin_audit.core.reports.sarif import sarif_log
from skin_audit.core.skeleton import cross_file_findings, skeleton_groups
from tests.core.audit.rule_helpers import audit
from tests.core.audit.test_animation_core import DEGREES, closed_form, play
from tests.core.report_samples import sample_report
from tests.core.skeleton.test_skeleton import audit as audit_humanoid
from tests.core.skeleton.test_skeleton import codes, file_of
from tests.factories import numpy_rigs as nr
from tests.factories.humanoid_rigs import MIXAMO, humanoid_rows


def test_the_action_timeline_and_spot_checks_keep_their_documented_keys():
    mesh = nr.skinned_mesh(nr.chain_tube(("Root", "Child")))
    m = play(mesh, DEGREES)
    m.spot_checks += [(1.0, 0.0), (4.0, 0.25)]
    _, entry = action_findings(m, AuditOptions())
    timeline = entry["timeline"]
    # The worst vertex at each frame: the half-and-half ring, r'/r = sqrt(1 - sin^2(theta / 2)) = |cos(theta / 2)|.
    np.testing.assert_allclose(timeline["sigma_min"], [abs(math.cos(math.radians(d) / 2)) for d in DEGREES],
                               atol=1e-12)
    assert closed_form(0.5, 170) == pytest.approx(abs(math.cos(math.radians(85))), abs=1e-15)
    assert [s["frame"] for s in entry["spot_checks"]] == [1.0, 4.0]
    assert [s["max_numpy_vs_blender_relative"] for s in entry["spot_checks"]] == [0.0, 0.25]


def test_engine_divergence_names_the_groups_of_bones_with_deform_off_and_the_reference():
    prepared = PreparedTarget(parts=(), rest=np.zeros((0, 3)), joint_count=0, non_deform_groups=("Hat", "Cape"),
                              non_deform_vertices=np.array([2, 5, 7], dtype=np.intp))
    found = Finding("engine-divergence", "WARNING", "3 vertices land", 3, (1, 2, 5), details={"target": "threejs"})
    out = explain_non_deform(found, prepared, THREEJS)
    assert out.details["non_deform_groups"] == ["Hat", "Cape"]
    assert out.details["non_deform_vertices"] == 2  # vertices 2 and 5
    assert out.details["target"] == "threejs"
    f = divergence_finding({"current": np.array([0.0, 0.5])}, size=1.0, relative=0.01, target=THREEJS,
                           reference="Blender")
    assert f is not None and f.details["reference"] == "Blender" and f.details["max_divergence"] == 0.5


def test_unnormalised_weights_drawn_as_stored_say_how_far_they_land():
    found = Finding("weights-not-normalized", "WARNING", "2 vertices do not sum to 1", 2, (1, 2),
                    details={"max_error": 0.1})
    # gltf draws weights as stored; per-vertex distances 0.02 and 0.005, tolerance 0.01, 2 world units per unit.
    (out,) = judge_unnormalised([found], GLTF, np.array([0.0, 0.02, 0.005]), size=1.0, tolerance=0.01,
                                scale=2.0, from_blend=False)
    assert out.severity == "WARNING"
    assert out.details["drawn_off"] == 1
    assert out.details["max_drawn_difference"] == pytest.approx(0.02)
    assert out.details["max_drawn_difference_world"] == pytest.approx(0.04)
    assert out.details["target_keeps_sums"] is True and out.details["max_error"] == 0.1


def test_the_bind_drift_metric_is_the_largest_rest_displacement():
    rig = nr.chain_tube(("Root", "Child"))
    at_rest = rig.rest.copy()
    at_rest[nr.ring(1)] += (0.0, 0.0, 0.01)
    at_rest[nr.ring(2)] += (0.0, 0.003, 0.004)  # 0.005
    result = audit(nr.skinned_mesh(rig, modelled=rig.rest, blender_at_rest=at_rest))
    assert result.metrics["max_bind_drift"] == pytest.approx(0.01, abs=1e-9)


def test_the_sweep_metrics_reach_zero_where_half_and_half_weights_turn_half_a_turn():
    # The ring weighted 1/2 to each bone: a 180 degree twist of Child blends (I + R_180) / 2, which
    # flattens the ring's cross-section to a line: smallest singular value and determinant 0.
    result = audit(nr.skinned_mesh(nr.chain_tube(("Root", "Child"))), shape_checks=True)
    assert result.metrics["min_volume_ratio"] == pytest.approx(0.0, abs=1e-9)
    assert result.metrics["min_singular_value"] == pytest.approx(0.0, abs=1e-9)


def test_an_ambiguous_humanoid_bone_names_it():
    from dataclasses import replace

    rows = humanoid_rows(MIXAMO)
    extra = replace(rows[-1], name="hand_r", parent="mixamorig:Hips")  # a second right hand, elsewhere
    rig, _ = audit_humanoid(rows + (extra,))
    assert codes(rig.findings)["humanoid-bone-ambiguous"].details["humanoid_bone"] == "rightHand"


def test_skeleton_group_members_name_their_file_and_armature():
    files = [file_of("a.blend", humanoid_rows(MIXAMO), "Hero"), file_of("b.glb", humanoid_rows(MIXAMO), "Rig")]
    (group,) = skeleton_groups(files)
    assert group["members"] == [{"path": "a.blend", "armature": "Hero"}, {"path": "b.glb", "armature": "Rig"}]


def test_two_files_are_enough_to_compare_skeletons():
    files = [file_of("a.blend", humanoid_rows(MIXAMO)),
             file_of("b.blend", humanoid_rows(MIXAMO, rename={"mixamorig:Spine1": "mixamorig:Spine_Mid"}))]
    out = cross_file_findings(files)
    assert "skeleton-differs" in codes(out[1].rigs[0].findings)
    assert "skeleton-differs" not in codes(out[0].rigs[0].findings)


def test_sarif_results_carry_the_groups_and_an_ignored_findings_severity():
    report = sample_report()
    stored = [f for file in report["files"] for m in file.get("meshes", ()) for f in m["findings"] if f.get("groups")]
    assert stored, "the sample report has a finding with groups"
    report["config"] = {"path": "skin_audit.toml", "changes": [
        {"action": "ignore", "code": "stray-weights", "before": "ERROR", "reason": "[severity] stray-weights",
         "path": "rigs/cylinder.blend", "object": "Cylinder", "armature": "Armature"}]}
    results = sarif_log(report)["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results if "suppressions" not in r}
    for f in stored:
        assert by_rule[f["code"]]["properties"]["groups"] == list(f["groups"])
    [suppressed] = [r for r in results if "suppressions" in r]
    assert suppressed["ruleId"] == "stray-weights" and suppressed["level"] == "error"
