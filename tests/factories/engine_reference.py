# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine models' pieces put together as the tests compare them with running engines: a
target's drawing of a .blend's weights at one pose (the audit prepares the exporter's weights
once and blends every pose from them, ``engine_target``), the node pose Babylon samples, and
three.js's clip duration."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from skin_audit.core.engines.targets import Target
from skin_audit.core.engines.weights import deform_prepared, prepare_exported
from skin_audit.core.gltf.document import GltfDocument, read_accessor
from skin_audit.core.gltf.skin import pose_at


def exported_deform(
    rest_positions: ArrayLike, joints: ArrayLike, weights: ArrayLike, joint_matrices: ArrayLike, target: Target
) -> NDArray[np.float64]:
    """Positions ``target`` draws for a .blend: its exporter, then the runtime's rules.

    Parameters
    ----------
    rest_positions : (V, 3) float
        Bind-pose positions in the armature's space.
    joints, weights : (V, K)
        Blender's influences (vertex groups of deforming bones).
    joint_matrices : (J, 4, 4) float
        Each bone's skinning matrix at the pose.
    target : Target
        ``target.exporter`` None means the runtime reads Blender's influences directly.

    Returns
    -------
    (V, 3) float64
        Vertices bound to the exporter's neutral joint stay at their rest position.
    """
    return deform_prepared(rest_positions, prepare_exported(joints, weights, target), joint_matrices)


def babylon_pose(doc: GltfDocument, clip: str | int | None = None, time: float | None = None) -> NDArray[np.float64]:
    """World matrices of every node, with the clip at ``time`` seconds as Babylon samples it.

    Rule 6: keys and node quaternions as stored, ``Quaternion.Slerp`` (the ``"babylon"``
    rule of :mod:`..gltf.animation`), clamped outside the keys.

    Parameters
    ----------
    doc : GltfDocument
    clip : str, int or None
        Animation name or index (the first when None).
    time : float or None
        Seconds; None is the rest pose.

    Returns
    -------
    (N, 4, 4) float64
        Column-vector world matrices in the glTF frame.
    """
    return pose_at(doc, clip, time, "babylon", "as_stored").world


def animation_duration(doc: GltfDocument, anim: int) -> float:
    """Last key time over the animation's samplers (three.js's clip duration), in seconds."""
    a = doc.item("animations", anim, "animation")
    # Input times only: a morph-weights output holds several values per key.
    ends = [
        float(read_accessor(doc, s.get("input"), f"animation {anim} sampler {i} input")[-1, 0])
        for i, s in enumerate(a.get("samplers", []))
    ]
    if not ends:
        raise doc.fail(f"animation {anim}", "has no samplers")
    return max(ends)
