# SPDX-License-Identifier: GPL-3.0-or-later
"""Morph targets (glTF 2.0, 3.7.2.2): weights at a time and the morphed bind-space positions.

Morphing comes before skinning: ``p = POSITION + sum_i w_i * target_i.POSITION``.  Weights
are the node's ``weights`` (else the mesh's), replaced by an animation channel on the
node's ``weights`` path when the clip has one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .animation import Sampler, sample
from .document import GltfDocument, read_accessor
from .skin import SkinnedPrimitive


def morph_weights(
    doc: GltfDocument, prim: SkinnedPrimitive, anim: int | None, time: float | None
) -> NDArray[np.float64]:
    """The primitive's morph weights with animation ``anim`` at ``time`` seconds.

    Returns
    -------
    (T,) float64
        One weight per morph target (empty without targets).
    """
    n = len(prim.morph_positions)
    weights = prim.morph_weights.copy()
    if n == 0 or anim is None or time is None:
        return weights
    a = doc.item("animations", anim, "animation")
    for c, ch in enumerate(a.get("channels", [])):
        target = ch.get("target", {})
        if target.get("path") != "weights" or target.get("node") != prim.node:
            continue
        where = f"animation {anim} channel {c}"
        samplers = a.get("samplers", [])
        si = ch.get("sampler")
        if not isinstance(si, int) or not 0 <= si < len(samplers):
            raise doc.fail(where, f"sampler {si!r} is out of range ({len(samplers)} samplers)")
        s = samplers[si]
        interpolation = s.get("interpolation", "LINEAR")
        times = read_accessor(doc, s.get("input"), where + " input")[:, 0]
        flat = read_accessor(doc, s.get("output"), where + " output")[:, 0]
        per_key = 3 if interpolation == "CUBICSPLINE" else 1
        # 3.11: a weights output holds one scalar per target per key (times 3 for splines).
        if len(flat) != per_key * n * len(times):
            raise doc.fail(where, f"weights output has {len(flat)} values for {len(times)} keys and {n} targets")
        weights = sample(Sampler(times, flat.reshape(-1, n), interpolation), float(time), "weights")
    return weights


def morphed_positions(prim: SkinnedPrimitive, weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Bind-space positions after morphing.

    Parameters
    ----------
    prim : SkinnedPrimitive
    weights : (T,) float64

    Returns
    -------
    (V, 3) float64
    """
    out = prim.positions.copy()
    for w, d in zip(weights, prim.morph_positions, strict=True):
        if w != 0.0:
            out += w * d
    return out
