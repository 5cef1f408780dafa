# SPDX-License-Identifier: GPL-3.0-or-later
"""Select and Preview in Engine on meshes that once crashed Blender or left an orphan object,
extension installed from its zip (scenario_panel_safety.py, in a subprocess: a crash fails
the check instead of killing pytest)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_panel_safety.py"


def test_panel_safety(scenario, check):
    scenario.require(check)
