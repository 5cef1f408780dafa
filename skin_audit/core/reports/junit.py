# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit report as JUnit XML (Jenkins, GitLab, GitHub test reporters).

Layout, chosen for how reporters render it:

- one ``<testsuite>`` per audited file (``name`` = the path);
- per rig (armature) and per mesh, one test case ``audit`` (always present, so
  a clean mesh counts as a passed test) and one test case per finding code
  present on it; ``classname`` is ``<path>.<object>`` (the armature object for
  a rig) with dots in each part replaced, so
  Jenkins groups cases by file then object instead of splitting a file name at
  its extension;
- a code's test case fails when its severity is at or above ``fail_on``.
  Reporters keep only the first ``<failure>`` of a case (Jenkins, GitLab), so
  several findings with one code on one mesh share one failure, every message
  in its body, and a case per code makes the failing rule the test's name;
- findings below ``fail_on`` pass, their text in ``<system-out>``;
- a file that could not be audited is one test case ``read`` with ``<error>``.

Valid against the Jenkins xunit-plugin ``junit-10.xsd`` (tests/schemas/).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..findings import SEVERITY_RANK
from .code_help import help_for
from .units import Unit, units

FAIL_LEVELS = ("error", "warning", "info", "never")


def fail_rank(fail_on: str) -> int | None:
    """Severity rank at or above which a finding fails; None for 'never'."""
    level = fail_on.strip().upper()
    if level == "NEVER":
        return None
    if level not in SEVERITY_RANK:
        raise InputError(f"fail_on {fail_on!r}: expected one of {', '.join(FAIL_LEVELS)}")
    return SEVERITY_RANK[level]


#: Characters XML 1.0 cannot hold at all (object names and messages may contain them).
_NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: object) -> str:
    """``text`` with characters XML cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", str(text))


def _part(text: str) -> str:
    # Jenkins splits classname at dots into package and class.
    return xml_text(text).replace(".", "_") or "_"


def finding_text(finding: Mapping[str, Any]) -> str:
    """One finding as a few plain lines: severity, message, what it affects, details."""
    lines = [f"[{finding.get('severity')}] {finding.get('code')}: {finding.get('message', '')}"]
    total = int(finding.get("vertices_total", len(finding.get("vertices", ()))))
    if total:
        shown = list(finding.get("vertices", ()))[:20]
        more = f" (+{total - len(shown)} more)" if total > len(shown) else ""
        lines.append(f"vertices ({total}): {', '.join(str(v) for v in shown)}{more}")
    for key in ("bones", "groups"):
        if finding.get(key):
            lines.append(f"{key}: {', '.join(str(b) for b in finding[key])}")
    if finding.get("details"):
        lines.append("details: " + ", ".join(f"{k}={v}" for k, v in finding["details"].items()))
    return "\n".join(lines)


def _by_code(findings: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for f in findings:
        out.setdefault(str(f.get("code")), []).append(f)
    return out


def _unit_cases(suite: ET.Element, path: str, unit: Unit, rank: int | None) -> tuple[int, int]:
    """Add one rig's or mesh's test cases; return (tests, failures)."""
    classname = f"{_part(path)}.{_part(unit.object)}"
    findings = list(unit.findings)
    case = ET.SubElement(suite, "testcase", name="audit", classname=classname)
    size = f"deforms {', '.join(unit.meshes)}" if unit.kind == "rig" else f"{unit.vertices} vertices"
    summary = [f"{unit.label}: {size}, {len(findings)} finding(s)"]
    summary += [f"{k}: {v}" for k, v in unit.metrics.items() if not isinstance(v, dict | list)]
    ET.SubElement(case, "system-out").text = "\n".join(summary)
    tests, failures = 1, 0
    for code, group in _by_code(findings).items():
        tests += 1
        case = ET.SubElement(suite, "testcase", name=code, classname=classname)
        worst = max(SEVERITY_RANK.get(str(f.get("severity")), 0) for f in group)
        body = "\n\n".join(finding_text(f) for f in group)
        if rank is not None and worst >= rank:
            failures += 1
            first = group[0]
            message = str(first.get("message", ""))
            if len(group) > 1:
                message += f" (and {len(group) - 1} more)"
            failure = ET.SubElement(case, "failure", type=code, message=message)
            failure.text = body + "\n\n" + help_for(code).rule
        else:
            ET.SubElement(case, "system-out").text = body
    return tests, failures


def junit_xml(report: Mapping[str, Any], fail_on: str) -> str:
    """The report as a JUnit XML document.

    Parameters
    ----------
    report : dict
        The JSON-shaped report (``AuditReport.to_dict()``, docs/report-format.md).
    fail_on : str
        'error', 'warning', 'info' or 'never': findings at or above it fail their test case.

    Returns
    -------
    str
        UTF-8 XML text with its declaration.
    """
    rank = fail_rank(fail_on)
    root = ET.Element("testsuites", name="skin_audit")
    totals = [0, 0, 0]
    for file in report.get("files", ()):
        path = str(file.get("path", ""))
        suite = ET.SubElement(root, "testsuite", name=path)
        tests = failures = errors = 0
        if file.get("status", "ok") != "ok":
            case = ET.SubElement(suite, "testcase", name="read", classname=_part(path))
            message = str(file.get("message", "") or "the file could not be audited")
            ET.SubElement(case, "error", type="file-error", message=message).text = message
            tests, errors = 1, 1
        for unit in units(file):
            t, f = _unit_cases(suite, path, unit, rank)
            tests += t
            failures += f
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("skipped", "0")
        totals = [totals[0] + tests, totals[1] + failures, totals[2] + errors]
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", str(totals[2]))
    for element in root.iter():
        element.attrib = {k: xml_text(v) for k, v in element.attrib.items()}
        if element.text:
            element.text = xml_text(element.text)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
