# SPDX-License-Identifier: GPL-3.0-or-later
"""The sidebar's lines for a humanoid rig: its map, what is missing and its rest pose, each short
enough for the sidebar at its default width; nothing for a rig that is no humanoid."""

from __future__ import annotations

import pytest

from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.rig_audit import audit_rig
from tests.factories.humanoid_rigs import MIXAMO, humanoid_rig, humanoid_rows
from tests.factories.numpy_rigs import chain_tube, skinned_mesh

pytestmark = [pytest.mark.blender, pytest.mark.blender42]


def test_a_humanoid_reads_its_map_and_rest_pose(bpy):
    from skin_audit.ui.panels import LINE_CHARS, humanoid_lines

    rig, _ = audit_rig("Armature", [skinned_mesh(humanoid_rig(humanoid_rows(MIXAMO, 40.0, without=("Hand",))))],
                       AuditOptions())
    lines = humanoid_lines(rig.skeleton)
    assert lines == [f"Humanoid: {len(rig.skeleton['humanoid']['bones'])} bones", "missing rightHand",
                     "Rest: A-pose, arms 40 deg"]
    assert all(len(line) <= LINE_CHARS for line in lines)
    tube, _ = audit_rig("Tube", [skinned_mesh(chain_tube(("Root", "Child")))], AuditOptions())
    assert humanoid_lines(tube.skeleton) == []
