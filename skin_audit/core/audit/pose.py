# SPDX-License-Identifier: GPL-3.0-or-later
"""A pose of an armature, apart from the rig it poses: what every recomputation is given.

A ``SkinnedMesh`` holds rest data and what is derived from it (its weight tables and layouts);
a ``Pose`` holds what changes from one pose to the next.  The audit's test poses (the sweep, the
stress poses, the cleared pose) start from rest, B-Bone pose properties included: a ``Pose`` made
from channel matrices alone.  The pose a file was read at also carries each B-Bone's pose
properties and Blender's own joints there (``SkinnedMesh.read_pose``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..maths.bbone import AT_REST_SHAPE, BBonePose

F64 = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Pose:
    """Every bone's channel matrix and, per B-Bone, what the pose adds to its curve.

    ``channel`` (J, 4, 4): ``pose_bone.matrix @ bone.matrix_local^-1`` in armature space (what the
    Armature modifier multiplies by).  ``bbones``: per bone, its ``BBonePose`` (None for a plain
    bone); empty means every B-Bone's pose properties are at rest.
    """

    channel: F64
    bbones: tuple[BBonePose | None, ...] = ()

    def bbone(self, bone: int) -> BBonePose:
        """What this pose adds to B-Bone ``bone``'s curve (its rest shape when nothing)."""
        found = self.bbones[bone] if self.bbones else None
        return AT_REST_SHAPE if found is None else found

    def at(self, channel: F64) -> Pose:
        """The same B-Bone pose properties at other channel matrices (joints read at this pose are
        used only where the channels they were read at come back)."""
        return Pose(channel, self.bbones)

    def at_each(self, channels: F64) -> list[Pose]:
        """``at`` each of the (P, J, 4, 4) ``channels``."""
        return [Pose(c, self.bbones) for c in channels]


def from_rest(channels: Iterable[F64]) -> list[Pose]:
    """Test poses at each of ``channels`` ((J, 4, 4) each): B-Bone pose properties at rest."""
    return [Pose(c) for c in channels]

