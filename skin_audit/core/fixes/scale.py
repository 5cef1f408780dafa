# SPDX-License-Identifier: GPL-3.0-or-later
"""The arithmetic of applying an armature object's scale to its rest pose (numpy only).

``blender/fix/scale.py`` is the fix (docs/fixes.md); this module holds what it computes:
with ``S`` the object's scale as a diagonal in armature space, each bone's new rest frame
``B'`` and the map ``D = B'^T S B`` from its old channels to its new ones, the per-channel
factors that map a pose and its keys, and the checks of a world matrix still scaled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances

#: The finding codes the scale fix fixes.
SCALE_CODES = ("non-uniform-armature-scale", "negative-armature-scale")

F64 = NDArray[np.float64]

#: B-Bone curve offsets and the bone axis each one runs along (X = 0, Z = 2).
CURVES = {"bbone_curveinx": 0, "bbone_curveoutx": 0, "bbone_curveinz": 2, "bbone_curveoutz": 2}
#: B-Bone rolls (about the bone's Y axis).
ROLLS = ("bbone_rollin", "bbone_rollout")
#: Pose-bone channels mapped component by component (a location is mapped by its matrix).
PER_AXIS = ("rotation_quaternion", "rotation_axis_angle", "rotation_euler", *CURVES, *ROLLS)


@dataclass(frozen=True)
class BoneMap:
    """How one bone's channels change.

    ``matrix`` (D, 3 x 3) maps old bone-local vectors to new ones and ``location`` the same for
    the frame the location channel lives in (the bone's; with Local Location off its parent's,
    or the armature's for a root).  ``mirror`` is -1 under a mirror, else 1: the new frame's X
    axis is the old one's image reversed, so rotations are conjugated by ``diag(mirror, 1, 1)``.
    """

    matrix: F64
    location: F64
    mirror: float

    def aligned(self, d: F64) -> bool:
        """Whether ``d`` is diagonal: per-axis factors then map each channel, and each key."""
        off = d - np.diag(np.diag(d))
        return bool(np.abs(off).max() <= tolerances.SCALE_FIX_AXIS_ALIGNED_RELATIVE * np.abs(d).max())

    def factor(self, prop: str, index: int) -> float | None:
        """The factor of one pose-bone channel component (1.0: unchanged); None for a location
        component that mixes with the other two (a non-uniform scale across the bone's axes)."""
        if prop == "location":
            return float(self.location[index, index]) if self.aligned(self.location) else None
        # A rotation conjugated by diag(m, 1, 1), m = +-1: its axis becomes m * diag(m, 1, 1) axis,
        # its angle stays; so X components stay and Y, Z ones (and rolls about Y) take m.
        if prop in ("rotation_quaternion", "rotation_axis_angle"):
            return 1.0 if index in (0, 1) else self.mirror
        if prop == "rotation_euler":
            return 1.0 if index == 0 else self.mirror
        if prop in ROLLS:
            return self.mirror
        if prop in CURVES:  # offsets along the bone's X or Z: exact for a uniform scale (D = s diag(+-1, 1, 1))
            return float(self.matrix[CURVES[prop], CURVES[prop]])
        return 1.0

    def axis_factor(self, prop: str, index: int) -> float:
        """``factor`` of a channel mapped per component (never a location that mixes)."""
        factor = self.factor(prop, index)
        if factor is None:  # only a location mixes; it is mapped by its matrix instead
            raise AssertionError(f"{prop} has no per-axis factor")
        return factor


def blender_scale(diagonal: F64) -> float:
    """Blender's ``mat3_to_scale`` of a diagonal matrix: the length of the unit (1,1,1)/sqrt 3 mapped.

    ``diagonal`` : (3,) float64.
    """
    return float(np.sqrt(np.mean(np.square(diagonal))))


def new_frame(rest: F64, s: F64) -> F64:
    """(3, 3) the rest frame the edit gives a bone: Y along ``S (tail - head)``, Z as close to
    ``S z`` as a frame perpendicular to Y allows (EditBone.align_roll).

    ``rest`` : (3, 3) float64 the bone's rest frame (columns X, Y, Z); ``s`` : (3,) float64.
    """
    y = s * rest[:3, 1]
    y /= np.linalg.norm(y)
    z = s * rest[:3, 2]
    z -= (z @ y) * y
    z /= np.linalg.norm(z)
    return np.column_stack([np.cross(y, z), y, z])


def bone_maps(rest: Mapping[str, F64], parents: Mapping[str, str | None],
              local_location: Mapping[str, bool], s: F64) -> dict[str, BoneMap]:
    """Per bone, how its channels map under the scale ``s`` (3,) float64, from each bone's rest
    frame ``rest[name]`` (3, 3) float64, its parent's name (None for a root) and whether its
    location is along its own axes (Local Location on)."""
    frames = {name: new_frame(frame, s).T @ np.diag(s) @ frame for name, frame in rest.items()}
    mirror = float(np.sign(np.prod(s)))
    out = {}
    for name in rest:
        parent = parents[name]
        # Local Location off: the location is along the parent's axes (the armature's for a root).
        loc = frames[name] if local_location[name] else (frames[parent] if parent else np.diag(s))
        out[name] = BoneMap(frames[name], loc, mirror)
    return out


def pose_path(path: str) -> tuple[str, str] | None:
    """('bone', 'property') of an F-curve path ``pose.bones["bone"].property``, else None."""
    if not path.startswith('pose.bones["') or '"].' not in path:
        return None
    bone, _, prop = path[len('pose.bones["'):].partition('"].')
    return bone.replace('\\"', '"'), prop


def still_scaled(world: F64) -> str:
    """Why a world matrix (4, 4) float64 still gets a scale finding, or ''."""
    if np.linalg.det(world[:3, :3]) < 0:
        return "mirrored"
    norms = np.linalg.norm(world[:3, :3], axis=0)
    if np.ptp(norms) > tolerances.NON_UNIFORM_SCALE_RELATIVE * norms.max():
        return f"scaled {norms.round(4).tolist()}"
    return ""

