# SPDX-License-Identifier: GPL-3.0-or-later
"""The built extension installs, enables, disables and re-enables cleanly (scenario_install.py)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

SCENARIO = "scenario_install.py"


def test_install(scenario, check):
    scenario.require(check)


def test_no_duplicate_command_registration(scenario):
    """Blender warns on stderr when a command id is registered twice."""
    assert scenario.results, "the scenario did not run"
    assert "registered duplicate command" not in scenario.stderr
