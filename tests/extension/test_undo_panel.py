# SPDX-License-Identifier: GPL-3.0-or-later
"""Results follow undo and redo: the panel and Export Report never describe data that is gone
(scenario_undo.py, extension installed from its zip)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_undo.py"


def test_undo_panel(scenario, check):
    scenario.require(check)
