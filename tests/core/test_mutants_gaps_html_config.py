# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML page lists what the config changed (docs/report-formats-ci.md: "what the config changed")."""

from __future__ import annotations

from report_samples import sample_report

from skin_audit.core.reports.html import html_page


def test_every_config_change_is_a_row_of_the_config_table():
    report = sample_report()
    report["config"] = {"path": "skin_audit.toml", "changes": [
        {"action": "severity", "path": "rigs/cylinder.blend", "object": "Cylinder", "code": "twist-collapse",
         "before": "WARNING", "after": "ERROR", "reason": "[severity] twist-collapse = 'error'"},
        {"action": "option", "code": "max_influences", "before": 4, "after": 8,
         "reason": "[audit] max_influences = 8"}]}
    page = html_page(report, "error")
    assert "<h2>Config</h2>" in page and "<code>skin_audit.toml</code>; 2 change(s)" in page
    section = page.split("<h2>Config</h2>", 1)[1]
    for text in ("severity", "rigs/cylinder.blend", "Cylinder", "twist-collapse", "WARNING", "ERROR",
                 "max_influences", "[audit] max_influences = 8"):
        assert text in section, text


def test_a_config_without_changes_says_so():
    report = sample_report()
    report["config"] = {"path": "skin_audit.toml", "changes": []}
    assert "<code>skin_audit.toml</code>; 0 change(s)" in html_page(report, "error")
    report["config"] = {"path": "skin_audit.toml"}
    assert "<code>skin_audit.toml</code>; 0 change(s)" in html_page(report, "error")
