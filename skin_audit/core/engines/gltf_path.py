# SPDX-License-Identifier: GPL-3.0-or-later
"""A target reading a glTF file: positions it draws for each skinned primitive at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..gltf.document import GltfDocument
from ..gltf.morph import morph_weights, morphed_positions
from ..gltf.skin import SkinnedPrimitive, joint_matrices, pose_at, skinned_primitives
from .targets import Target
from .weights import deform


@dataclass(frozen=True)
class EnginePositions:
    """One skinned primitive's positions as the target draws them."""

    primitive: SkinnedPrimitive
    positions: NDArray[np.float64]  # (V, 3) world space (3.7.3.3: the mesh node's transform is ignored)


def stacked_influences(prim: SkinnedPrimitive) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
    """All sets side by side (``JOINTS_0`` columns first) and the first set's weight component type.

    Returns
    -------
    joints : (V, 4 S) int64
    weights : (V, 4 S) float64
    component_type : int
    """
    joints = np.concatenate([s.joints for s in prim.sets], axis=1)
    weights = np.concatenate([s.weights for s in prim.sets], axis=1)
    return joints, weights, prim.sets[0].weight_component_type


def gltf_engine_positions(
    doc: GltfDocument, target: Target, clip: str | int | None = None, time: float | None = None
) -> list[EnginePositions]:
    """Every skinned primitive deformed by ``target`` with the clip at ``time`` seconds.

    Parameters
    ----------
    doc : GltfDocument
    target : Target
    clip : str, int or None
        Animation name or index (first when None).
    time : float or None
        Seconds; None is the rest pose.

    Returns
    -------
    list of EnginePositions
    """
    pose = pose_at(doc, clip, time, target.interpolation, target.rotation)
    out = []
    for prim in skinned_primitives(doc):
        joints, weights, ctype = stacked_influences(prim)
        rest = morphed_positions(prim, morph_weights(doc, prim, pose.animation, time))
        pos = deform(
            rest,
            joints,
            weights,
            joint_matrices(doc, prim.skin, pose.world),
            target,
            set_width=4,
            weight_component_type=ctype,
        )
        out.append(EnginePositions(primitive=prim, positions=pos))
    return out
