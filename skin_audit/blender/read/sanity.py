# SPDX-License-Identifier: GPL-3.0-or-later
"""What makes a skinned mesh impossible to audit, said before any array is built.

A rig that cannot be audited (an armature with no bones, an object scaled to
zero, a NaN transform) is bad input: the file gets status ``error`` with a
message naming the object and what to do, never a traceback.
"""

from __future__ import annotations

import bpy
import numpy as np

from ...core import tolerances
from ...core.errors import InputError
from .arrays import matrix


def _transform_problem(obj: bpy.types.Object) -> str:
    m = matrix(obj.matrix_world)
    if not np.isfinite(m).all():
        return "has a NaN or infinite transform"
    s = np.linalg.svd(m[:3, :3], compute_uv=False)
    if not s[0] > 0.0 or s[-1] < tolerances.SINGULAR_TRANSFORM_RELATIVE * s[0]:
        scale = [round(float(v), 6) for v in obj.scale]
        return f"is scaled to zero along an axis (scale {scale}, world singular values {s.round(9).tolist()})"
    return ""


def require_auditable(obj: bpy.types.Object, mod: bpy.types.ArmatureModifier) -> None:
    """Raise InputError when ``obj`` deformed by ``mod`` cannot be audited at all."""
    arm = mod.object
    if len(arm.data.bones) == 0:
        raise InputError(f"armature '{arm.name}' (modifier '{mod.name}' of '{obj.name}') has no bones: "
                         "nothing deforms the mesh; add bones or remove the modifier")
    for what, o in (("armature", arm), ("mesh", obj)):
        problem = _transform_problem(o)
        if problem:
            raise InputError(f"{what} '{o.name}' {problem}: its transform cannot be inverted, so the mesh "
                             "cannot be taken into armature space; fix the object's scale")
