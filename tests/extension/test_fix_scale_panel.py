# SPDX-License-Identifier: GPL-3.0-or-later
"""The armature scale fix from its rig entry's Fix button, extension installed from its zip
(scenario_fix_scale.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_fix_scale.py"


def test_fix_scale_panel(scenario, check):
    scenario.require(check)
