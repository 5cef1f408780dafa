# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine target choice and Preview in Engine on real data (scenario_engine_preview.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_engine_preview.py"


def test_engine_preview_panel(scenario, check):
    scenario.require(check)
