# SPDX-License-Identifier: GPL-3.0-or-later
"""The terminal and the HTML page show what the JSON holds of skeletons and animation: the
humanoid map and rest pose of a rig, the run's skeleton groups, and a plot per action."""

from __future__ import annotations

import re

from skin_audit.core.reports.html import html_page, timeline_svg
from skin_audit.core.reports.text import summary_lines

RIG = {
    "armature": "Armature", "meshes": ["Body"], "metrics": {}, "findings": [],
    "skeleton": {"humanoid": {"humanoid": True, "bones": {"hips": "mixamorig:Hips", "head": "mixamorig:Head"},
                              "how": {"hips": "name", "head": "name"}, "missing": ["rightHand"], "ambiguous": {}},
                 "rest_pose": {"limbs": {"leftArm": {"below_horizontal": 40.0, "forward": 0.0}},
                               "convention": "a"},
                 "signature": {"size": 1.0, "bones": []}},
    "animation": {"frames": 3, "requested": [], "missing": [], "actions": [
        {"action": "Run", "mesh": "Body", "frames": 3, "worst_frames": {"collapse": [2.0]},
         "timeline": {"frame": [1.0, 2.0, 3.0], "sigma_min": [1.0, 0.1, 0.9], "det_min": [1.0, 0.2, 0.9],
                      "engine_divergence_max": [None, None, None]}, "spot_checks": []}]},
}
REPORT = {
    "files": [{"path": "a.blend", "status": "ok", "rigs": [RIG], "meshes": []}],
    "skeletons": [{"skeleton": 1, "bones": 20, "members": [{"path": "a.blend", "armature": "Armature"}]},
                  {"skeleton": 2, "bones": 20, "members": [{"path": "b.blend", "armature": "Rig"}],
                   "related_to_skeleton_1": True, "summary": "1 renamed ('Spine1' -> 'Spine_Mid')"}],
    "summary": {"files": 1, "files_with_errors": 0, "meshes": 0, "rigs": 1, "worst_severity": None},
}


def test_the_terminal_names_the_map_the_rest_pose_and_the_groups():
    text = "\n".join(summary_lines(REPORT, "error"))
    assert "humanoid: 2 humanoid bones mapped, missing rightHand; hips = mixamorig:Hips" in text
    assert "rest pose: A-pose; arms leftArm 40 deg below horizontal" in text
    assert "skeletons: 2 distinct among 2 rig(s)" in text
    assert "skeleton 2 (20 deform bones): b.blend (Rig); differs from skeleton 1: 1 renamed ('Spine1' -> 'Spine_Mid')" \
        in text


def test_the_page_has_the_map_the_groups_and_a_plot_per_action():
    page = html_page(REPORT, "error")
    assert "<h2>Skeletons</h2>" in page and "Spine_Mid" in page
    assert "humanoid map: 2 bones, missing rightHand" in page and "mixamorig:Hips" in page
    assert "Rest pose: A-pose." in page
    assert "<b>Run</b> on Body" in page and 'class="timeline"' in page


def test_the_plot_puts_each_frame_where_its_value_is():
    svg = timeline_svg([1.0, 2.0, 3.0], [("s", [1.0, 0.5, None], "#000")], size=(108, 122))
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    # x from 4 to 104 over frames 1-3, y from 108 (value 0) to 8 (value 1, the top); None left out.
    assert points == ["4,8", "54,58"]
