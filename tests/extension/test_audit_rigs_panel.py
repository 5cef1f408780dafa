# SPDX-License-Identifier: GPL-3.0-or-later
"""Rig entries in the Findings panel on a two-mesh character (scenario_audit_rigs.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_audit_rigs.py"


def test_audit_rigs_panel(scenario, check):
    scenario.require(check)
