# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/report-format.md documents exactly the finding codes the audit can report."""

from __future__ import annotations

import re
from pathlib import Path

from skin_audit.core.audit.animation import ANIMATION_CODES
from skin_audit.core.audit.animation_data import ANIMATION_DATA_CODES
from skin_audit.core.audit.finite import NON_FINITE_RESULT
from skin_audit.core.audit.mesh_audit import RULE_CODES
from skin_audit.core.audit.report import REPORT_VERSION
from skin_audit.core.audit.shape_checks import SHAPE_CODES
from skin_audit.core.audit.surface_verdicts import SURFACE_CODES
from skin_audit.core.audit.weight_smoothness import SMOOTHNESS_CODES
from skin_audit.core.codes import CODES, FIXABLE, codes_of
from skin_audit.core.engines import babylon
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
    assert documented_codes() == set(CODES)


def test_the_rule_modules_list_their_family_of_the_codes_table():
    """The code lists the rule modules hold are the families of core/codes.py."""
    assert set(ANIMATION_CODES) == codes_of("animation")
    assert set(ANIMATION_DATA_CODES) == codes_of("animation-data")
    assert set(babylon.FINDING_CODES) == codes_of("babylon")
    assert NON_FINITE_RESULT in codes_of("mesh")
    assert SURFACE_CODES | SMOOTHNESS_CODES <= codes_of("shape")
    assert RULE_CODES | SHAPE_CODES | GLTF_CODES == set(CODES)
    assert not RULE_CODES & SHAPE_CODES and not (RULE_CODES | SHAPE_CODES) & GLTF_CODES


def test_the_fixable_codes_are_the_codes_with_a_fix():
    """The CLI's choices, the fixes and the table agree: every code with a fix text is fixable."""
    from skin_audit.cli import build_parser

    assert list(FIXABLE) == [c for c, e in CODES.items() if e.fix]
    fix = next(a for a in build_parser()._subparsers._group_actions[0].choices["fix"]._actions
               if "--code" in a.option_strings)
    assert list(fix.choices) == list(FIXABLE)


def test_the_documented_version_is_the_written_one():
    assert f"format version {REPORT_VERSION}" in DOC.read_text(encoding="utf-8")
