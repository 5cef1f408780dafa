# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit: every frame of an action, as Blender poses the rig, measured in numpy.

Blender gives each frame's pose (its own evaluation: constraints, drivers and IK included);
for every vertex of every mesh the numpy side takes the deform map's linear part (the
blended 3x3 Blender's modifier applies there, B-Bone segments included: the Jacobian of the
linear blend, found by blending the unit axes through the mesh's layout of runs), its
smallest singular value (collapse: the cylinder's ``r'/r`` generalised) and its determinant
(volume), and where the engine target draws the vertex against Blender.  Frames arrive in
batches and only per-vertex running worsts and a per-frame worst value are kept: memory does
not grow with the number of frames.

``ActionMeasures`` accumulates one action over one mesh; ``action_findings`` turns it into
findings and the JSON timeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..engines.targets import Target
from ..findings import Finding
from ..maths.bone_runs import blend_runs_many
from ..maths.small_svd import WORKSPACE_ROWS, smallest_singular_and_det
from .armature_modifier import _displacements, joint_matrices, recompute_blender
from .engine_target import PreparedTarget, engine_offsets, engine_offsets_many, target_positions
from .options import AuditOptions
from .skinned_mesh import SkinnedMesh

F64 = NDArray[np.float64]
#: The codes this module reports (part of mesh_audit.RULE_CODES).
ANIMATION_CODES = frozenset({"animation-collapse", "animation-volume-loss", "animation-engine-divergence",
                             "animation-mismatch"})
#: Matrix entries one batch of frames holds at most ((P, V, 3, 3) float64: 32 MB).
BATCH_VALUES = 4 << 20
#: Rows per call of the 3x3 measure (as the pose sweep's blocks: long, yet in cache).
MEASURE_ROWS = 16384
#: How many worst frames a measure names.
WORST_FRAMES = 3
#: Bones named as responsible for a worst vertex.
BONES_SHOWN = 3


def measurable(mesh: SkinnedMesh) -> bool:
    """Whether the linear measures apply: the modifier blends vertex groups linearly (Preserve
    Volume's dual quaternions keep a rigid blend's shape, and are not measured)."""
    return mesh.modifier.use_vertex_groups and not mesh.modifier.preserve_volume


def frame_linear(mesh: SkinnedMesh, channels: F64, by_runs: bool = False) -> F64:
    """(P, V, 3, 3) the deform map's linear part at each vertex, in mesh space, per pose.

    Blender's linear blend is ``p' = p + a sum_j s_j (D_j p)`` with ``D_j = P^-1 M_j P - I`` and
    ``s_j = w_j / sum w`` (``a / sum w`` is ``SkinnedMesh.blend_scale``); its Jacobian is
    ``I + a sum_j s_j D_j[:3, :3]``.  Without deform B-Bones the sum runs over each vertex's slots
    of the influence table; with them, blending each unit axis (with a zero homogeneous row)
    through the layout's runs gives one column of it, the B-Bone joints included.

    Parameters
    ----------
    channels : (P, J, 4, 4) float64, ``matrix_channel`` of every bone at each pose
    by_runs : through the layout's runs even without B-Bones (the two ways agree; a test holds them)
    """
    layout = mesh.blend_layout
    poses = len(channels)
    out = np.zeros((poses, mesh.vertex_count, 3, 3))
    if not layout.joints and not by_runs:
        # (P, J, 9) each bone's linear displacement in mesh space; gathered per slot.
        d9 = np.stack([_displacements(mesh, m)[:, :, :3].reshape(-1, 9) for m in channels])
        table = mesh.influence_table
        acc = out.reshape(poses, mesh.vertex_count, 9)
        for k in range(table.bones.shape[1]):
            acc += table.weights[None, :, k, None] * d9[:, table.bones[:, k]]
        acc *= mesh.blend_scale[None, :, None]
    else:
        joints = joint_matrices(mesh, channels) if layout.joints else [(np.zeros((0, 4, 4)), None)] * poses
        matrices = np.stack([np.concatenate([c, j]) for c, (j, _) in zip(channels, joints, strict=True)])
        displacement = np.stack([_displacements(mesh, m) for m in matrices])  # (P, R, 3, 4)
        n = int(layout.runs.starts[-1])
        for k in range(3):
            axis = np.zeros((4, n))
            axis[k] = 1.0
            for p, column in enumerate(blend_runs_many(layout.runs, axis, displacement, layout.scaled)):
                out[p, :, :, k] += column.T  # (3, V) without add_to
    out[:, :, [0, 1, 2], [0, 1, 2]] += 1.0
    return out


def _measure(linear: F64) -> tuple[F64, F64]:
    """``smallest_singular_and_det`` of (N, 9) rows in blocks sharing one workspace (no block
    allocates its temporaries afresh)."""
    n = len(linear)
    smallest, det = np.empty(n), np.empty(n)
    workspace = np.empty((WORKSPACE_ROWS, min(n, MEASURE_ROWS)))
    for lo in range(0, n, MEASURE_ROWS):
        hi = min(lo + MEASURE_ROWS, n)
        smallest_singular_and_det(linear[lo:hi], workspace, (smallest[lo:hi], det[lo:hi]))
    return smallest, det


@dataclass
class ActionMeasures:
    """One action over one mesh, accumulated batch by batch."""

    mesh: SkinnedMesh
    action: str
    #: The engine target whose drawing is compared with Blender's (None: not compared).
    target: Target | None
    frames: list[float] = field(default_factory=list)
    #: Per frame: the worst vertex's value of each measure (the timeline).
    sigma_min: list[float] = field(default_factory=list)
    det_min: list[float] = field(default_factory=list)
    divergence_max: list[float | None] = field(default_factory=list)
    #: Per vertex: its worst value over every frame so far, and that frame.
    vertex_sigma: F64 = field(init=False)
    vertex_det: F64 = field(init=False)
    vertex_divergence: F64 = field(init=False)
    sigma_frame: NDArray[np.float64] = field(init=False)
    det_frame: NDArray[np.float64] = field(init=False)
    divergence_frame: NDArray[np.float64] = field(init=False)
    #: Spot checks: (frame, largest distance numpy vs Blender's evaluated mesh relative to the size).
    spot_checks: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        v = self.mesh.vertex_count
        self.vertex_sigma = np.full(v, np.inf)
        self.vertex_det = np.full(v, np.inf)
        self.vertex_divergence = np.zeros(v)
        self.sigma_frame = np.full(v, np.nan)
        self.det_frame = np.full(v, np.nan)
        self.divergence_frame = np.full(v, np.nan)

    def add(self, frames: Sequence[float], channels: F64, prepared: PreparedTarget | None) -> None:
        """Measure a batch of frames: ``channels`` (P, J, 4, 4) Blender's pose at each (in pieces of
        at most ``BATCH_VALUES`` matrix entries, so memory does not grow with the batch)."""
        step = max(1, BATCH_VALUES // max(9 * self.mesh.vertex_count, 1))
        for lo in range(0, len(frames), step):
            self._add(list(frames[lo:lo + step]), channels[lo:lo + step], prepared)

    def _add(self, frames: Sequence[float], channels: F64, prepared: PreparedTarget | None) -> None:
        size = self.mesh.size()
        self.frames += [float(f) for f in frames]
        if measurable(self.mesh) and self.mesh.vertex_count:
            # One measure over every vertex of every frame of the batch: (P V, 9) rows.
            sigma, det = _measure(frame_linear(self.mesh, channels).reshape(-1, 9))
            self._keep(np.asarray(frames, dtype=np.float64), sigma.reshape(len(frames), -1),
                       det.reshape(len(frames), -1))
        else:
            self.sigma_min += [float("nan")] * len(frames)
            self.det_min += [float("nan")] * len(frames)
        many = engine_offsets_many(self.mesh, channels, prepared) \
            if self.target is not None and prepared is not None else None
        for p, _ in enumerate(frames):
            d = many[p] if many is not None else self._engine_distances(channels[p], prepared)
            if d is None or not d.size:
                self.divergence_max.append(None)
                continue
            rel = d / size
            self.divergence_max.append(float(rel.max()))
            worse = rel > self.vertex_divergence
            self.vertex_divergence[worse] = rel[worse]
            self.divergence_frame[worse] = frames[p]

    def _engine_distances(self, channel: F64, prepared: PreparedTarget | None) -> F64 | None:
        """(V,) how far the target draws each vertex from Blender at ``channel``: one blend of the
        weight differences where that applies, else the target's positions against Blender's."""
        if self.target is None or prepared is None:
            return None
        d = engine_offsets(self.mesh, channel, prepared)
        if d is not None:
            return d
        engine = target_positions(self.mesh, self.target, channel, prepared)
        blender = recompute_blender(self.mesh.with_channel(channel), channel).positions
        with np.errstate(invalid="ignore", over="ignore"):
            out: F64 = np.sqrt(((engine - blender) ** 2).sum(axis=1))
        return np.where(np.isfinite(out), out, np.inf)

    def _keep(self, frames: F64, sigma: F64, det: F64) -> None:
        """Fold a batch's (P, V) measures into the timeline and the per-vertex worsts."""
        with np.errstate(invalid="ignore"):
            self.sigma_min += np.nanmin(sigma, axis=1, initial=np.inf).tolist()
            self.det_min += np.nanmin(det, axis=1, initial=np.inf).tolist()
        for values, worst, at in ((sigma, self.vertex_sigma, self.sigma_frame), (det, self.vertex_det, self.det_frame)):
            # Each vertex's first lowest frame of the batch (NaN never counts as lower).
            clean = np.where(np.isnan(values), np.inf, values)
            k = np.argmin(clean, axis=0)
            low = clean[k, np.arange(clean.shape[1])]
            lower = low < worst
            worst[lower] = low[lower]
            at[lower] = frames[k[lower]]

    def worst_frames(self, values: Sequence[float | None], lowest: bool) -> list[float]:
        """The frames of the ``WORST_FRAMES`` worst values (lowest or highest), worst first."""
        pairs = [(v, f) for v, f in zip(values, self.frames, strict=True)
                 if v is not None and np.isfinite(v) and (lowest or v > 0)]
        pairs.sort(key=lambda t: t[0] if lowest else -t[0])
        return [f for _, f in pairs[:WORST_FRAMES]]


def _bones_at(mesh: SkinnedMesh, vertex: int) -> tuple[str, ...]:
    table = mesh.influence_table
    order = np.argsort(-table.weights[vertex], kind="stable")
    return tuple(mesh.bones.names[int(table.bones[vertex, k])] for k in order[:BONES_SHOWN]
                 if table.weights[vertex, k] > 0)


def _squash(code: str, m: ActionMeasures, values: F64, frames_of: F64, threshold: float, what: str,
            timeline: Sequence[float]) -> Finding | None:
    bad = values < threshold
    if not bad.any():
        return None
    v = int(np.argmin(values))
    frame = float(frames_of[v])
    bones = _bones_at(m.mesh, v)
    worst = m.worst_frames(timeline, lowest=True)
    return Finding(
        code, "WARNING",
        f"action '{m.action}': {int(bad.sum())} vertices {what} below {threshold:g} while it plays; worst "
        f"vertex {v} at frame {frame:g} ({values[v]:.3g}), moved by {', '.join(bones)}; worst frames "
        f"{', '.join(f'{f:g}' for f in worst)}. Preserve Volume (DQS) would keep a rigid blend's shape; "
        "engines use linear blending",
        int(bad.sum()), tuple(np.flatnonzero(bad).tolist()), bones,
        details={"action": m.action, "frame": frame, "worst_vertex": v, "worst_value": float(values[v]),
                 "worst_frames": worst})


def action_findings(m: ActionMeasures, options: AuditOptions) -> tuple[list[Finding], dict[str, Any]]:
    """The findings of one action on one mesh, and its JSON entry (timeline included)."""
    findings: list[Finding] = []
    if measurable(m.mesh):
        for f in (_squash("animation-collapse", m, m.vertex_sigma, m.sigma_frame, options.collapse_threshold,
                          "shrink (smallest singular value of the blend)", m.sigma_min),
                  _squash("animation-volume-loss", m, m.vertex_det, m.det_frame, options.volume_threshold,
                          "lose volume (determinant of the blend)", m.det_min)):
            if f is not None:
                findings.append(f)
    far = m.vertex_divergence > options.divergence_relative
    target = m.target.name if m.target is not None else ""
    if far.any():
        v = int(np.argmax(m.vertex_divergence))
        size = m.mesh.size()
        worst = m.worst_frames(m.divergence_max, lowest=False)
        findings.append(Finding(
            "animation-engine-divergence", "WARNING",
            f"action '{m.action}': the {target} target draws {int(far.sum())} vertices away from Blender while it "
            f"plays; worst vertex {v} at frame {float(m.divergence_frame[v]):g}, "
            f"{m.vertex_divergence[v] * size:.3g} away ({m.vertex_divergence[v]:.2%} of the mesh size); worst "
            f"frames {', '.join(f'{f:g}' for f in worst)}",
            int(far.sum()), tuple(np.flatnonzero(far).tolist()), _bones_at(m.mesh, v),
            details={"action": m.action, "target": target, "frame": float(m.divergence_frame[v]),
                     "worst_vertex": v, "worst_relative": float(m.vertex_divergence[v]), "worst_frames": worst}))
    bad_spots = [(f, d) for f, d in m.spot_checks if not d <= tolerances.SKINNING_MATCH_RELATIVE]
    if bad_spots:
        frame, dist = max(bad_spots, key=lambda t: t[1] if np.isfinite(t[1]) else np.inf)
        findings.append(Finding(
            "animation-mismatch", "ERROR",
            f"action '{m.action}': Blender's evaluated mesh at frame {frame:g} is {dist:.3g} of the mesh size "
            "away from the numpy recomputation of that frame's pose: the animation drives something the "
            "recomputation does not see (B-Bone curve or shape key animation, a modifier), so its measures "
            "are not Blender's",
            len(bad_spots), details={"action": m.action, "frame": frame, "relative": dist}))

    def finite(values: Sequence[float | None]) -> list[float | None]:
        return [None if v is None or not np.isfinite(v) else float(v) for v in values]

    entry = {
        "action": m.action, "mesh": m.mesh.object, "frames": len(m.frames),
        "first_frame": m.frames[0] if m.frames else None, "last_frame": m.frames[-1] if m.frames else None,
        "worst_frames": {"collapse": m.worst_frames(m.sigma_min, True), "volume": m.worst_frames(m.det_min, True),
                         "engine_divergence": m.worst_frames(m.divergence_max, False)},
        "timeline": {"frame": list(m.frames), "sigma_min": finite(m.sigma_min), "det_min": finite(m.det_min),
                     "engine_divergence_max": finite(m.divergence_max)},
        "spot_checks": [{"frame": f, "max_numpy_vs_blender_relative": None if not np.isfinite(d) else d}
                        for f, d in m.spot_checks],
    }
    return findings, entry
