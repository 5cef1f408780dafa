# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/report-format.md documents exactly the finding codes the audit can report."""

from __future__ import annotations

import re
from pathlib import Path

from skin_audit.core.audit.mesh_audit import RULE_CODES
from skin_audit.core.audit.report import REPORT_VERSION
from skin_audit.core.audit.shape_checks import SHAPE_CODES
from skin_audit.core.engines.gltf_audit import GLTF_CODES

DOC = Path(__file__).resolve().parents[2] / "docs" / "report-format.md"


def documented_codes() -> set[str]:
    table = DOC.read_text(encoding="utf-8").split("## Finding codes", 1)[1]
    codes: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            codes |= set(re.findall(r"`([a-z0-9-]+)`", line.split("|")[1]))
    return codes


def test_every_code_is_documented_and_every_documented_code_exists():
    assert documented_codes() == RULE_CODES | SHAPE_CODES | GLTF_CODES  # glTF input: engines/gltf_audit.py


def test_the_documented_version_is_the_written_one():
    assert f"format version {REPORT_VERSION}" in DOC.read_text(encoding="utf-8")
