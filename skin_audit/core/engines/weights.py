# SPDX-License-Identifier: GPL-3.0-or-later
"""A target's influences and deformation, on plain arrays.

The audit has its own per-vertex influence tables; these functions take ``(V, K)``
joints and weights as stored (for glTF: the sets side by side, ``JOINTS_0`` columns
first) and return what the target would draw.  Non-finite results are returned, not
raised, so the audit can report them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from ..gltf.document import NORMALISATION_SCALE
from ..maths.bone_runs import BoneRuns, blend_runs, gather_points, runs_from_table
from ..maths.influences import row_sums, rows_with
from .targets import ExporterModel, Target


def _checked(joints: ArrayLike, weights: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    j = np.asarray(joints, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    if j.ndim != 2 or j.shape != w.shape:
        raise ShapeError(f"joints {j.shape} and weights {w.shape} must both be (V, K)")
    return j, w


def _keep(
    j: NDArray[np.int64], w: NDArray[np.float64], n: int, selection: str
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    if j.shape[1] <= n:
        return j, w
    if selection == "slots":
        return j[:, :n], w[:, :n]
    # Stable sort on -w: equal weights keep their stored order (NaN sorts last).
    order = np.argsort(-w, axis=1, kind="stable")[:, :n]
    return np.take_along_axis(j, order, axis=1), np.take_along_axis(w, order, axis=1)


def exporter_weights(
    joints: ArrayLike, weights: ArrayLike, exporter: ExporterModel
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]:
    """Influences after an exporter: small weights dropped, the largest kept, renormalised.

    Parameters
    ----------
    joints : (V, K) int
        Joint indices (a vertex group's bone; -1 or any index for an empty slot with weight 0).
    weights : (V, K) float
        Blender's vertex-group weights.
    exporter : ExporterModel

    Returns
    -------
    joints : (V, min(K, N)) int64
    weights : (V, min(K, N)) float64
        Rows sum to 1 (float32 rounding, as the exporter writes float32).
    neutral : (V,) bool
        Vertices left with no influence: the exporter binds them to an added joint that
        never moves, so every runtime draws them at their rest position.
    """
    j, w = _checked(joints, weights)
    w = np.where(w <= exporter.min_weight, 0.0, w)
    j, w = _keep(j, w, exporter.max_influences, "largest")
    neutral = ~rows_with(w > 0)
    if exporter.renormalises:
        s = row_sums(w)[:, None]
        w = np.divide(w, s, out=np.zeros_like(w), where=s > 0)
        w = w.astype(np.float32).astype(np.float64)
    if exporter.neutral_joint_for_unweighted:
        # Slot 0 gets weight 1 on a joint index past every real one (the added neutral joint).
        w[neutral] = 0.0
        w[neutral, 0] = 1.0
        j[neutral] = 0
        j[neutral, 0] = -1
    return j, w, neutral


@dataclass(frozen=True)
class PreparedInfluences:
    """What a target's runtime skins with, computed once for every pose of a mesh.

    ``joints``/``weights`` (V, K) after the exporter and the runtime's weight rules;
    ``stay`` (V,) the vertices drawn at their rest position (the runtime's zero-weight rule,
    or the exporter's neutral joint for unweighted vertices).
    """

    joints: NDArray[np.int64]
    weights: NDArray[np.float64]
    stay: NDArray[np.bool_]


def prepare_exported(joints: ArrayLike, weights: ArrayLike, target: Target) -> PreparedInfluences:
    """The influences ``target`` draws a .blend with: its exporter, then the runtime's rules."""
    if target.exporter is None:
        j, w = engine_weights(joints, weights, target, set_width=None)
        neutral = np.zeros(len(j), dtype=bool)
    else:
        ej, ew, neutral = exporter_weights(joints, weights, target.exporter)
        j, w = engine_weights(np.where(ej < 0, 0, ej), np.where(ej < 0, 0.0, ew), target, set_width=4)
        if not target.exporter.neutral_joint_for_unweighted:
            neutral = np.zeros(len(j), dtype=bool)
    stay = np.asarray(neutral, dtype=bool).copy()
    if target.zero_weight_rule == "stay":
        stay |= ~rows_with(w != 0.0)
    return PreparedInfluences(np.asarray(j), np.asarray(w, dtype=np.float64), stay)


def deform_prepared(rest_positions: ArrayLike, prepared: PreparedInfluences,
                    joint_matrices: ArrayLike) -> NDArray[np.float64]:
    """(V, 3) positions drawn from prepared influences at one pose (non-finite values returned)."""
    p = np.asarray(rest_positions, dtype=np.float64)
    out = blend(p, prepared.joints, prepared.weights, joint_matrices)
    out[prepared.stay] = p[prepared.stay]
    return out


@dataclass(frozen=True)
class PosedLayout:
    """Prepared influences laid out for many poses: weights grouped by joint (``bone_runs``)."""

    runs: BoneRuns
    gathered: NDArray[np.float64]  # (4, N) rest positions in run order, a row of ones last
    rest: NDArray[np.float64]  # (V, 3)
    #: (V,) a used slot names no joint (out of range): the vertex is NaN at every pose.
    invalid: NDArray[np.bool_]
    stay: NDArray[np.bool_]  # (V,)


def layout_prepared(rest_positions: ArrayLike, prepared: PreparedInfluences, joint_count: int) -> PosedLayout:
    """``prepared`` laid out once for ``deform_layout`` at every pose of a mesh with ``joint_count`` joints."""
    p = np.asarray(rest_positions, dtype=np.float64)
    used = prepared.weights != 0.0
    valid = (prepared.joints >= 0) & (prepared.joints < joint_count)
    runs = runs_from_table(np.where(valid, prepared.joints, 0), np.where(valid, prepared.weights, 0.0))
    return PosedLayout(runs, gather_points(runs, p), p, rows_with(used & ~valid), prepared.stay)


def deform_layout(layout: PosedLayout, joint_matrices: ArrayLike) -> NDArray[np.float64]:
    """(V, 3) what ``deform_prepared`` gives, from a layout (the same up to summation order)."""
    m = np.asarray(joint_matrices, dtype=np.float64)
    out: NDArray[np.float64] = np.ascontiguousarray(blend_runs(layout.runs, layout.gathered, m).T)
    out[layout.invalid] = np.nan
    out[layout.stay] = layout.rest[layout.stay]
    return out


def engine_weights(
    joints: ArrayLike,
    weights: ArrayLike,
    target: Target,
    *,
    set_width: int | None = 4,
    weight_component_type: int = 5126,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The influences ``target`` deforms with, from influences as stored.

    Parameters
    ----------
    joints : (V, K) int
        Joint slots (for glTF: indices into ``skin.joints``), sets side by side.
    weights : (V, K) float
        Weights as stored (dequantised, never normalised).
    target : Target
    set_width : int or None
        Columns per glTF influence set (4); None when the table is not from glTF sets,
        so ``target.reads_sets`` does not apply.
    weight_component_type : int
        The file's WEIGHTS component type (5121/5123 normalised integers are
        re-quantised when ``target.requantises``).

    Returns
    -------
    joints : (V, K') int64
    weights : (V, K') float64
        Non-finite weights pass through (NaN sums give NaN weights).
    """
    j, w = _checked(joints, weights)
    # 1. The sets the runtime reads.
    if set_width is not None and target.reads_sets is not None:
        j, w = j[:, : set_width * target.reads_sets], w[:, : set_width * target.reads_sets]
    # 2. Small weights dropped, then the influences the runtime keeps.
    if target.min_weight > 0:
        w = np.where(w < target.min_weight, 0.0, w)
    if target.max_influences is not None:
        j, w = _keep(j, w, target.max_influences, target.selection)
    if target.normalisation == "none":
        return j, w.copy()
    # 3. Normalise; the zero rule for vertices whose weights sum to exactly zero.
    total = row_sums(np.abs(w)) if target.normalisation == "abs_sum" else row_sums(w)
    zero = total == 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = w / np.where(zero, 1.0, total)[:, None]
    if target.zero_weight_rule == "first_slot":
        out[zero] = 0.0
        out[zero, 0] = 1.0
    elif target.zero_weight_rule == "vanish":
        # Babylon: w = sum of weights <= 0 leaves the vertex no position (NaN on its CPU path).
        out[~(total > 0.0)] = np.nan
    if target.requantises and weight_component_type in NORMALISATION_SCALE:
        scale = NORMALISATION_SCALE[weight_component_type]
        # MathUtils.normalize: Math.round(x * scale), i.e. floor(x + 0.5) (ties up, unlike np.round).
        out = np.floor(out * scale + 0.5) / scale
    return j, out


#: Vertices per block of the blend: a block's temporaries stay in cache.
BLEND_BLOCK = 8192


def blend(
    rest_positions: ArrayLike, joints: ArrayLike, weights: ArrayLike, joint_matrices: ArrayLike
) -> NDArray[np.float64]:
    """Linear blend skinning ``p' = sum_k w_k M_{j_k} p`` with zero-weight slots skipped.

    Skipping (rather than multiplying by zero) is what three.js's CPU path does, and it keeps
    an out-of-range or non-finite joint on an unused slot from poisoning the vertex.  A used
    slot whose joint is out of range gives NaN.

    Parameters
    ----------
    rest_positions : (V, 3) float
    joints : (V, K) int
    weights : (V, K) float
    joint_matrices : (J, 4, 4) float

    Returns
    -------
    (V, 3) float64
    """
    p = np.asarray(rest_positions, dtype=np.float64)
    j, w = _checked(joints, weights)
    m = np.asarray(joint_matrices, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) != len(j):
        raise ShapeError(f"rest_positions {p.shape} must be (V, 3) with V = {len(j)}")
    if m.ndim != 3 or m.shape[1:] != (4, 4):
        raise ShapeError(f"joint_matrices {m.shape} must be (J, 4, 4)")
    # Block by block (cache-sized temporaries): blend each vertex's used slots' 3x4 rows
    # (12 numbers) and apply the blend once.  An unused slot never reaches the vertex, so a
    # non-finite matrix on it cannot poison it; a used slot with a joint out of range is NaN.
    m12 = m[:, :3, :].reshape(len(m), 12)
    out: NDArray[np.float64] = np.empty((len(p), 3))
    for lo in range(0, len(p), BLEND_BLOCK):
        hi = min(lo + BLEND_BLOCK, len(p))
        acc = np.zeros((hi - lo, 12))
        for k in range(j.shape[1]):
            wk = w[lo:hi, k]
            used = wk != 0.0
            if not used.any():
                continue
            jk = j[lo:hi, k]
            valid = (jk >= 0) & (jk < len(m))
            rows = np.take(m12, np.where(valid, jk, 0), axis=0)
            rows[~valid] = np.nan
            with np.errstate(invalid="ignore", over="ignore"):  # inf * weight stays for the audit to report
                rows *= wk[:, None]
                acc += np.where(used[:, None], rows, 0.0)
        c = p[lo:hi]
        with np.errstate(invalid="ignore", over="ignore"):
            out[lo:hi] = acc[:, 0::4] * c[:, 0:1] + acc[:, 1::4] * c[:, 1:2] + acc[:, 2::4] * c[:, 2:3] + acc[:, 3::4]
    # An all-zero vertex under "stay" is handled by the caller; here zero weights give the origin.
    return out


def deform(
    rest_positions: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    joint_matrices: ArrayLike,
    target: Target,
    *,
    set_width: int | None = 4,
    weight_component_type: int = 5126,
) -> NDArray[np.float64]:
    """Positions ``target`` draws, in skinning space, from influences as stored.

    Parameters
    ----------
    rest_positions : (V, 3) float
        Bind-space positions.
    joints, weights : (V, K)
        As stored (see :func:`engine_weights`).
    joint_matrices : (J, 4, 4) float
        ``world(joint) @ inverse bind`` per joint slot.
    target : Target

    Returns
    -------
    (V, 3) float64
        Non-finite values are returned as they come.
    """
    j, w = engine_weights(joints, weights, target, set_width=set_width, weight_component_type=weight_component_type)
    out = blend(rest_positions, j, w, joint_matrices)
    if target.zero_weight_rule == "stay":
        stay = ~np.any(w != 0.0, axis=1)
        out[stay] = np.asarray(rest_positions, dtype=np.float64)[stay]
    return out
