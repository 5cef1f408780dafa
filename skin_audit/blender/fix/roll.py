# SPDX-License-Identifier: GPL-3.0-or-later
"""The fix of ``chain-roll-inconsistent``: roll each bone the finding names back to the frame of
the bone it continues from (docs/fixes.md).

In Edit Mode, parents first, each named bone's Z axis is set to its parent's Z carried to it by
the shortest turn from the parent's Y to its own (``core.audit.joints.transport``), with
``EditBone.align_roll``: the measure the audit uses reads 0 after it.  Heads, tails, weights and
meshes do not move (a bone's roll turns its frame about its own length only); what changes is the
meaning of local rotations on those bones: a pose or keys set on them turn about the new axes.
"""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np

from ...core.audit.joints import transport
from ...core.errors import InputError
from ..build.objects import enter_edit, leave_edit


def _depth(bone: bpy.types.Bone) -> int:
    d = 0
    while bone.parent is not None:
        bone, d = bone.parent, d + 1
    return d


def _deform_parent(bone: bpy.types.EditBone) -> bpy.types.EditBone | None:
    parent = bone.parent
    while parent is not None and not parent.use_deform:
        parent = parent.parent
    return parent


def roll_chain(context: bpy.types.Context, arm: bpy.types.Object, names: Sequence[str]) -> tuple[str, int]:
    """Roll the bones ``names`` of ``arm`` to their deform parents' frames; (message, bones rolled)."""
    if arm.library is not None or arm.data.library is not None:
        raise InputError(f"'{arm.name}' is linked from a library; make it local to roll its bones")
    known = [n for n in names if n in arm.data.bones]
    order = sorted(known, key=lambda n: _depth(arm.data.bones[n]))
    previous, mode = enter_edit(context.view_layer, arm)
    rolled = 0
    try:
        edit = arm.data.edit_bones
        for name in order:
            bone = edit[name]
            parent = _deform_parent(bone)
            if parent is None:
                continue
            yp = np.array(parent.y_axis, dtype=np.float64)
            yc = np.array(bone.y_axis, dtype=np.float64)
            z = transport(np.array(parent.z_axis, dtype=np.float64), yp / np.linalg.norm(yp),
                          yc / np.linalg.norm(yc))
            bone.align_roll(tuple(z.tolist()))
            rolled += 1
    finally:
        leave_edit(context.view_layer, previous, mode)
    return f"rolled {rolled} bones of '{arm.name}' to the frame of the bone each continues from", rolled
