# SPDX-License-Identifier: GPL-3.0-or-later
"""The rest pose of a humanoid: T-pose, A-pose or neither, per limb.  numpy only.

The character's own axes come from its skeleton, so an armature turned in its object
transform (a glTF's Y-up, a rig lying down) is judged alike: *up* runs from the hips to
the head, *across* from the right upper arm to the left one (made perpendicular to up),
*forward* completes them; each is snapped to the nearest armature axis within 30 degrees
of it (a spine leans; the armature a character stands in does not).  For each arm, the
direction from the upper arm's head to the lower arm's head is measured as degrees *below
the horizontal* (0 in a T-pose, about 45 in an A-pose) and degrees *forward* of the side;
for each leg, the direction from the upper leg's head to the foot's head as degrees *out
from the vertical*.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from .humanoid import HumanoidMap

F64 = NDArray[np.float64]

#: The arms' angle below the horizontal each convention expects, and how far off it may be (degrees).
CONVENTIONS = {"t": (0.0, tolerances.T_POSE_DEGREES),
               "a": (tolerances.A_POSE_ARM_DEGREES, tolerances.A_POSE_DEGREES)}
LIMBS = (("leftArm", "leftUpperArm", "leftLowerArm", 1.0), ("rightArm", "rightUpperArm", "rightLowerArm", -1.0))
#: A skeleton's up and across directions within this of an armature axis are taken as that axis.
SNAP_DEGREES = 30.0
LEGS = (("leftLeg", "leftUpperLeg", "leftFoot", 1.0), ("rightLeg", "rightUpperLeg", "rightFoot", -1.0))


@dataclass(frozen=True)
class RestPose:
    """Per limb, its angles at rest (degrees), and the convention they match (``t``, ``a`` or None)."""

    #: limb -> {"below_horizontal": deg, "forward": deg} for arms, {"from_vertical": deg} for legs.
    limbs: dict[str, dict[str, float]]
    convention: str | None

    def to_dict(self) -> dict[str, object]:
        return {"limbs": {k: dict(v) for k, v in self.limbs.items()}, "convention": self.convention}

    def arms(self) -> dict[str, float]:
        return {k: v["below_horizontal"] for k, v in self.limbs.items() if "below_horizontal" in v}

    def off_by(self, convention: str) -> dict[str, float]:
        """Degrees each arm is away from ``convention``'s arm angle (its sign kept: + is lower)."""
        want = CONVENTIONS[convention][0]
        return {k: a - want for k, a in self.arms().items()}


def _unit(v: F64) -> F64 | None:
    n = float(np.linalg.norm(v))
    return None if n <= tolerances.DIVISION_GUARD else v / n


def _snap(v: F64) -> F64:
    """``v`` (unit) snapped to the nearest armature axis when within SNAP_DEGREES of it: a
    standing character's spine leans, its armature's axes do not."""
    k = int(np.argmax(np.abs(v)))
    if abs(float(v[k])) < np.cos(np.radians(SNAP_DEGREES)):
        return v
    axis = np.zeros(3)
    axis[k] = np.sign(v[k])
    return axis


def measure_rest_pose(mapping: HumanoidMap, names: tuple[str, ...], heads: F64) -> RestPose | None:
    """The humanoid's limb angles at rest, or None where its axes cannot be found.

    Parameters
    ----------
    mapping : the humanoid map of the rig
    names : (J,) bone names the mapping's values index
    heads : (J, 3) float64 rest heads (armature space)
    """
    index = {n: j for j, n in enumerate(names)}
    b = mapping.bones

    def head(key: str) -> F64 | None:
        return heads[index[b[key]]] if key in b and b[key] in index else None

    hips, top = head("hips"), head("head")
    if top is None:
        top = head("neck")
    la, ra = head("leftUpperArm"), head("rightUpperArm")
    if hips is None or top is None or la is None or ra is None:
        return None
    up = _unit(top - hips)
    if up is None:
        return None
    up = _snap(up)
    across = _unit((la - ra) - ((la - ra) @ up) * up)
    if across is None:
        return None
    across = _snap(across)
    forward = np.cross(across, up)  # left x up: Blender's -Y for a character facing -Y with its left on +X
    def direction(start: str, end: str) -> F64 | None:
        """The unit direction from one humanoid bone's head to another's, if both are mapped."""
        a, e = head(start), head(end)
        return None if a is None or e is None else _unit(e - a)

    limbs: dict[str, dict[str, float]] = {}
    for limb, upper, lower, sign in LIMBS:
        d = direction(upper, lower)
        if d is None:
            continue
        side = float(d @ across) * sign
        limbs[limb] = {
            "below_horizontal": float(np.degrees(np.arctan2(-float(d @ up), np.hypot(side, float(d @ forward))))),
            "forward": float(np.degrees(np.arctan2(float(d @ forward), side))),
        }
    for limb, upper, foot, sign in LEGS:
        d = direction(upper, foot)
        if d is not None:
            limbs[limb] = {"from_vertical": float(np.degrees(np.arctan2(float(d @ across) * sign, -float(d @ up))))}
    arms = [v["below_horizontal"] for v in limbs.values() if "below_horizontal" in v]
    convention = None
    if arms:
        for name, (want, tol) in CONVENTIONS.items():
            if all(abs(a - want) <= tol for a in arms):
                convention = name
    return RestPose(limbs, convention)
