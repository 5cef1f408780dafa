# SPDX-License-Identifier: GPL-3.0-or-later
"""The Audit and Findings panels and their operators on real data (scenario_audit.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_audit.py"


def test_audit_panel(scenario, check):
    scenario.require(check)
