# SPDX-License-Identifier: GPL-3.0-or-later
"""The Twist Demo panel and its operators on real data (scenario_twist.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_twist.py"


def test_twist_panel(scenario, check):
    scenario.require(check)
