# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit from the panel, extension installed from its zip (scenario_animation.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_animation.py"


def test_animation_panel(scenario, check):
    scenario.require(check)
