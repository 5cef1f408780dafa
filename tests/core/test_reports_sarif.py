# SPDX-License-Identifier: GPL-3.0-or-later
"""SARIF 2.1.0: valid against the OASIS schema; one rule per code, results with the
file, the object and its vertices/bones; levels; ignored findings kept as suppressed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_samples import UNWEIGHTED, sample_report

from skin_audit.core.findings import Finding
from skin_audit.core.reports.config import AuditConfig, apply_config
from skin_audit.core.reports.sarif import artifact_uri, sarif_json, sarif_log

jsonschema = pytest.importorskip("jsonschema")  # dev dependency (requirements-dev.txt)
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "sarif-schema-2.1.0.json").read_text())
DOCS_URI = "https://example.org/skin_audit/docs/report-format.md"


def validate(log: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(log)


def test_valid_against_the_oasis_schema_with_and_without_help_uri():
    validate(json.loads(sarif_json(sample_report())))
    validate(json.loads(sarif_json(sample_report(), DOCS_URI)))


def test_schema_check_has_teeth():
    log = sarif_log(sample_report())
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validate(log)


def test_one_rule_per_code_and_results_point_at_their_rule():
    run = sarif_log(sample_report(), DOCS_URI)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert sorted(ids) == sorted({"twist-collapse", "unweighted-vertices", "preserve-volume-on",
                                  "group-without-bone", "too-many-influences", "multiple-root-bones"})
    for r in rules:
        assert r["helpUri"] == f"{DOCS_URI}#{r['id']}"
        assert r["help"]["text"] and r["shortDescription"]["text"]
    assert len(run["results"]) == 7
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]


def test_levels_files_objects_vertices_and_bones():
    run = sarif_log(sample_report())["runs"][0]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert {k: by_rule[k]["level"] for k in ("unweighted-vertices", "twist-collapse", "preserve-volume-on")} == {
        "unweighted-vertices": "error", "twist-collapse": "warning", "preserve-volume-on": "note"}
    twist = by_rule["twist-collapse"]
    loc = twist["locations"][0]
    assert loc["physicalLocation"] == {"artifactLocation": {"uri": "rigs/cylinder.blend"}, "region": {"startLine": 1}}
    assert {"name": "Cylinder", "fullyQualifiedName": "Cylinder", "kind": "object"} in loc["logicalLocations"]
    assert {"name": "Bone.001", "fullyQualifiedName": "Armature/Bone.001", "kind": "member"} in loc["logicalLocations"]
    assert twist["message"]["text"].startswith("Cylinder (armature Armature): 120 vertices shrink")
    assert "vertices 64, 65, 66, 67, 68, 69, 70, 71, 72, 73 and 110 more" in twist["message"]["text"]
    assert twist["properties"]["vertices_total"] == 120
    group = by_rule["group-without-bone"]
    assert group["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "rigs/character%20v2.glb"
    assert "groups Bone.OLD" in group["message"]["text"]


def test_rig_findings_name_the_armature():
    run = sarif_log(sample_report())["runs"][0]
    [roots] = [r for r in run["results"] if r["ruleId"] == "multiple-root-bones"]
    assert roots["message"]["text"] == "Armature (rig): 2 deform roots: Hips, Prop [bones Hips, Prop]"
    assert [loc["fullyQualifiedName"] for loc in roots["locations"][0]["logicalLocations"]] == [
        "Armature", "Armature/Hips", "Armature/Prop"]


def test_unreadable_file_is_a_notification_and_the_run_not_successful():
    inv = sarif_log(sample_report())["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    [note] = inv["toolExecutionNotifications"]
    assert note["level"] == "error" and "missing.glb" in note["message"]["text"]


def test_ignored_findings_stay_as_suppressed_results():
    config = AuditConfig(path="skin_audit.toml", severity={"unweighted-vertices": "IGNORE"})
    kept, changes = apply_config([UNWEIGHTED], config, path="rigs/cylinder.blend", object="Cylinder",
                                 armature="Armature")
    assert kept == ()
    report = sample_report()
    report["files"][0]["meshes"][0]["findings"] = [
        f for f in report["files"][0]["meshes"][0]["findings"] if f["code"] != "unweighted-vertices"]
    report["config"] = {"path": "skin_audit.toml", "changes": [c.to_dict() for c in changes]}
    log = sarif_log(report)
    validate(log)
    [suppressed] = [r for r in log["runs"][0]["results"] if "suppressions" in r]
    assert suppressed["ruleId"] == "unweighted-vertices" and suppressed["level"] == "error"
    assert suppressed["suppressions"][0]["justification"] == "ignored by skin_audit.toml"
    assert suppressed["locations"][0]["logicalLocations"][0]["name"] == "Cylinder"


def test_fingerprints_are_stable_and_distinct():
    a = [r["partialFingerprints"] for r in sarif_log(sample_report())["runs"][0]["results"]]
    b = [r["partialFingerprints"] for r in sarif_log(sample_report())["runs"][0]["results"]]
    assert a == b and len({json.dumps(x) for x in a}) == len(a)


def test_numpy_and_non_finite_details_still_make_strict_json():
    import numpy as np

    report = sample_report()
    odd = Finding("stray-weights", "WARNING", "m", 1, (1,), details={"worst": np.float64(np.inf),
                                                                     "per": np.arange(2)})
    report["files"][0]["meshes"][0]["findings"].append(odd.to_dict())
    log = json.loads(sarif_json(report))
    validate(log)
    [stray] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "stray-weights"]
    assert stray["properties"]["details"] == {"worst": "inf", "per": [0, 1]}


def test_artifact_uris():
    assert artifact_uri("a b/c#1.glb") == "a%20b/c%231.glb"
    assert artifact_uri("/abs/x y.blend") == "file:///abs/x%20y.blend"
    assert artifact_uri("C:\\rigs\\x.blend") == "file:///C:/rigs/x.blend"
