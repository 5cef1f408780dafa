# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint budgets: how many bones each engine target skins in one draw, and where it says so.

Counted per skinned mesh as the bones that weight at least one of its vertices (what a
runtime must upload for that mesh, and what Unreal counts per section).  A target with no
documented limit (three.js and Babylon.js store bone matrices in a texture; Godot 4 and
Unity have none in their documentation) has no budget and is never judged.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JointBudget:
    target: str
    limit: int
    #: What is past the limit, for the message.
    consequence: str
    source: str


BUDGETS: dict[str, JointBudget] = {
    "unreal": JointBudget(
        "unreal", 256,
        "Unreal's default 8-bit bone indices hold 256 bones per section: a section weighted by more is split "
        "into chunks (a draw call each) unless 'Support 16-bit Bone Index' is on in the project settings",
        "Unreal Engine documentation, 'Skeletal Mesh Rendering Paths' (8-bit and 16-bit bone indexes; "
        "Max Bones Per Section)"),
}
#: Documented limits that no target models, kept for the docs and the messages.
MOBILE_UNREAL_BONES = 75  # Unreal Engine 4.27 'Meshes for mobile platforms': skeletal meshes up to 75 bones


def budget_for(target: str) -> JointBudget | None:
    """The joint budget of ``target`` (a name of core.engines.targets), or None."""
    return BUDGETS.get(target)
