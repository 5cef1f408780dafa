# SPDX-License-Identifier: GPL-3.0-or-later
"""The help texts the report files carry cover exactly the codes documented in
docs/report-format.md, with the documented severities."""

from __future__ import annotations

import re
from pathlib import Path

from skin_audit.core.reports.code_help import CODE_HELP, DOC_PATH, help_for

DOC = Path(__file__).resolve().parents[2] / DOC_PATH


def documented() -> dict[str, str]:
    """code -> severity column, from the docs' finding-code table."""
    table = DOC.read_text(encoding="utf-8").split("## Finding codes", 1)[1]
    out: dict[str, str] = {}
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.split("|")]
        codes = re.findall(r"`([a-z0-9-]+)`", cells[1])
        severities = [s.strip() for s in cells[2].split("/")]
        # 'a / b' codes with 'X / Y' severities pair up; one severity for a list applies to all.
        paired = "/" in cells[1] and len(severities) == len(codes)
        for i, code in enumerate(codes):
            out[code] = severities[i] if paired else cells[2]
    return out


def test_help_covers_exactly_the_documented_codes():
    assert set(CODE_HELP) == set(documented())


def test_help_severity_is_the_documented_one():
    docs = documented()
    assert {c: h.severity for c, h in CODE_HELP.items()} == docs


def test_every_entry_explains_and_unknown_codes_get_a_neutral_entry():
    for h in CODE_HELP.values():
        assert h.title and h.rule.endswith(".") and h.default_level in ("ERROR", "WARNING", "INFO")
    assert help_for("made-up-code").rule.startswith("See docs/report-format.md")
