# SPDX-License-Identifier: GPL-3.0-or-later
"""Animation findings' counts and details as the report carries them, on hand-made actions."""

from __future__ import annotations

import math

from skin_audit.core.audit.animation_data import ActionData, Channel, EulerSamples, animation_data_findings
from tests.factories import numpy_rigs as nr


def _bones():
    return nr.bones_table([nr.BoneRow("Root", (0, 0, 0), (0, 1, 0)),
                           nr.BoneRow("Arm", (0, 1, 0), (0, 2, 0), "Root")])


def test_missing_bones_are_counted_and_listed():
    action = ActionData("Act", (1, 10), (
        Channel('pose.bones["Gone"].location', 0, ((1, 0.0), (10, 1.0))),
        Channel('pose.bones["Lost"].rotation_quaternion', 1, ((1, 0.0), (10, 1.0))),
        Channel('pose.bones["Arm"].location', 0, ((1, 0.0), (10, 1.0))),
    ))
    (f,) = [f for f in animation_data_findings("Rig", _bones(), [action]) if f.code == "animation-missing-bone"]
    assert f.count == 2 and f.bones == ("Gone", "Lost")
    assert f.details == {"action": "Act", "bones": ["Gone", "Lost"]}


def test_an_euler_flip_names_its_channel_index():
    frames = (1.0, 2.0, 3.0)
    flip = EulerSamples("Arm", 1, frames, tuple(math.radians(d) for d in (170, 178, -178)))
    found = animation_data_findings("Rig", _bones(), [ActionData("Spin", (1, 3), (), (flip,))])
    (f,) = [f for f in found if f.code == "animation-euler-flip"]
    assert f.details["index"] == 1 and f.details["bone"] == "Arm" and f.details["frame"] == 2.0
    assert f.count == 1
