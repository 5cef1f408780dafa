# SPDX-License-Identifier: GPL-3.0-or-later
"""The Fix buttons and operator on real data, extension installed from its zip (scenario_fix.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_fix.py"


def test_fix_panel(scenario, check):
    scenario.require(check)
