# SPDX-License-Identifier: GPL-3.0-or-later
"""JUnit XML: valid against Jenkins' junit-10.xsd, one suite per file, a case per
mesh and per code, failures exactly for findings at or above --fail-on."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_samples import mesh, sample_report

from skin_audit.core.errors import InputError
from skin_audit.core.reports.junit import junit_xml

xmlschema = pytest.importorskip("xmlschema")  # dev dependency (requirements-dev.txt)
SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "junit-10.xsd"


@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(str(SCHEMA))


def suites(xml: str) -> dict[str, ET.Element]:
    return {s.get("name"): s for s in ET.fromstring(xml.encode()).iter("testsuite")}


@pytest.mark.parametrize("fail_on", ["error", "warning", "info", "never"])
def test_valid_against_the_jenkins_schema(schema, fail_on):
    schema.validate(junit_xml(sample_report(), fail_on))


def test_counts_at_fail_on_error():
    s = suites(junit_xml(sample_report(), "error"))
    assert list(s) == ["rigs/cylinder.blend", "rigs/character v2.glb", "missing.glb"]
    # cylinder: 'audit' for the rig and 2 meshes + 1 rig code + 3 mesh codes; only unweighted-vertices is an ERROR.
    cyl = s["rigs/cylinder.blend"]
    assert (cyl.get("tests"), cyl.get("failures"), cyl.get("errors")) == ("7", "1", "0")
    failed = [c.get("name") for c in cyl.iter("testcase") if c.find("failure") is not None]
    assert failed == ["unweighted-vertices"]
    body = s["rigs/character v2.glb"]
    assert (body.get("tests"), body.get("failures")) == ("3", "0")
    missing = s["missing.glb"]
    assert (missing.get("tests"), missing.get("errors")) == ("1", "1")
    assert missing.find("testcase/error").get("message") == "missing.glb: no such file or folder"
    root = ET.fromstring(junit_xml(sample_report(), "error").encode())
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("11", "1", "1")


def test_warning_fails_warnings_and_one_code_is_one_failure_with_every_message():
    s = suites(junit_xml(sample_report(), "warning"))
    assert s["rigs/cylinder.blend"].get("failures") == "3"
    rig = [c for c in s["rigs/cylinder.blend"].iter("testcase") if c.get("classname") == "rigs/cylinder_blend.Armature"]
    assert [c.get("name") for c in rig] == ["audit", "multiple-root-bones"]
    assert "Hips, Prop" in rig[1].find("failure").text
    body = s["rigs/character v2.glb"]
    assert body.get("failures") == "2"
    case = next(c for c in body.iter("testcase") if c.get("name") == "too-many-influences")
    failures = case.findall("failure")
    assert len(failures) == 1  # reporters read only the first failure of a case
    assert "5 vertices have more than 4 influences" in failures[0].text
    assert "2 more vertices on a second modifier" in failures[0].text
    assert failures[0].get("message").endswith("(and 1 more)")


def test_never_fails_nothing_but_still_reports_unreadable_files():
    root = ET.fromstring(junit_xml(sample_report(), "never").encode())
    assert root.get("failures") == "0" and root.get("errors") == "1"
    passing = [c for c in root.iter("testcase") if c.get("name") == "twist-collapse"]
    assert "shrink to 6.1e-17" in passing[0].find("system-out").text


def test_classname_groups_by_file_then_object_without_extension_dots():
    s = suites(junit_xml(sample_report(), "error"))
    names = {c.get("classname") for c in s["rigs/character v2.glb"].iter("testcase")}
    assert names == {"rigs/character v2_glb.Body_001"}


def test_names_xml_cannot_hold_are_replaced_and_the_file_stays_valid(schema):
    report = sample_report()
    report["files"][0]["meshes"] = [mesh("Bad\x00name\x1b<&>", ())]
    report["files"][0]["rigs"] = []
    report["files"][0]["path"] = "odd\x07path.blend"
    xml = junit_xml(report, "error")
    schema.validate(xml)
    assert "Bad\ufffdname\ufffd<&>" in ET.fromstring(xml.encode()).find(".//testcase/system-out").text


def test_unknown_fail_on_is_refused():
    with pytest.raises(InputError, match="fail_on 'fatal'"):
        junit_xml(sample_report(), "fatal")
