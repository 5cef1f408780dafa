# SPDX-License-Identifier: GPL-3.0-or-later
"""Printed text, byte for byte: hand-written expectations for the lines people and CI logs read
(escaped names, durations, missing values). Mutation testing found these lines unpinned."""

from __future__ import annotations

from skin_audit.core.reports.code_help import CodeHelp, help_for
from skin_audit.core.reports.progress import _duration
from skin_audit.core.reports.text import _fmt, summary_lines
from skin_audit.core.text import printable


def test_only_the_unsafe_characters_of_a_name_are_escaped():
    # A newline forges a log line: it is shown as \n, and the letters around it stay letters.
    assert printable("Arm\nL") == "Arm\\nL"
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("x\u202ey") == "x\\u202ey"
    assert printable("Épaule.L") == "Épaule.L"


def test_durations_are_whole_units():
    assert _duration(59.4) == "59 s"
    assert _duration(61) == "1 min 01 s"
    assert _duration(3 * 3600 + 5 * 60 + 7) == "3 h 05 min"


def test_a_missing_value_is_n_a_and_a_present_one_prints():
    assert _fmt(None) == "n/a"
    assert _fmt(12) == "12"
    assert _fmt(0.000123456) == "0.000123"


def _report(findings):
    rig = {"armature": "Armature", "meshes": [], "metrics": {}, "findings": findings}
    return {"files": [{"path": "a.blend", "status": "ok", "rigs": [rig], "meshes": []},
                      {"path": "bad.blend", "status": "error", "message": "not a .blend"}],
            "summary": {"files": 2, "files_with_errors": 1, "meshes": 0, "rigs": 1, "worst_severity": "WARNING"}}


def test_min_severity_lists_its_own_level_and_counts_what_it_hides():
    findings = [{"code": "a-warning", "severity": "WARNING", "message": "w"},
                {"code": "an-info", "severity": "INFO", "message": "i"}]
    lines = summary_lines(_report(findings), "error", min_severity="warning")
    assert "    [WARNING] a-warning: w" in lines
    assert not any("an-info:" in line for line in lines)
    assert any(line.endswith(" (1 below --min-severity warning not listed)") for line in lines)
    assert "bad.blend: ERROR: not a .blend" in lines
    assert lines[-1] == ("2 file(s), 1 unreadable, 0 mesh(es), 1 rig(s); findings: 1 WARNING, 1 INFO; "
                         "worst finding: WARNING (failing on: error)")


def test_help_of_a_known_code_and_the_neutral_entry_of_an_unknown_one():
    known = help_for("stray-weights")
    assert (known.code, known.severity, known.title) == ("stray-weights", "WARNING / INFO", "Stray weights")
    unknown = help_for("from-a-newer-audit")
    assert (unknown.code, unknown.severity, unknown.title, unknown.rule, unknown.action) == (
        "from-a-newer-audit", "WARNING", "from-a-newer-audit",
        "See docs/report-format.md for 'from-a-newer-audit'.", "")
    assert isinstance(unknown, CodeHelp)
