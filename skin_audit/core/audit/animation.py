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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..engines.gltf_clip import ClipDrawing
from ..engines.targets import Target
from ..findings import Finding
from ..maths.bone_runs import PARALLEL_FROM
from ..maths.parallel import GEMM_SIZE, run_all, thread_count
from ..maths.small_svd import WORKSPACE_ROWS, smallest_singular_and_det
from .armature_modifier import joint_matrices, recompute_blender_many
from .engine_target import PreparedTarget, engine_offsets_many, target_positions_many, world_scale
from .options import AuditOptions
from .skinned_mesh import SkinnedMesh

F64 = NDArray[np.float64]
#: The codes this module reports (part of mesh_audit.RULE_CODES).
ANIMATION_CODES = frozenset({"animation-collapse", "animation-volume-loss", "animation-engine-divergence",
                             "animation-clip-divergence", "animation-mismatch"})
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


@dataclass(frozen=True)
class JacobianTable:
    """The distinct weightings of a mesh's vertices, for its blend's linear part at many frames at once.

    The linear part depends on a vertex's weights and matrices only, not on its position, so
    vertices weighted alike (a glTF exporter's quantised weights, rigid parts) share one row:
    ``vertex_row[v]`` is vertex ``v``'s.  Rows come grouped by the matrices that weigh them: the
    rows ``lo:hi`` of a group share the matrices ``index`` (into the bones then the B-Bone joints),
    and their weights (Blender's ``blend_scale`` folded in) are the group's first ``len(index)``
    columns of ``weight``.  A piece of frames then costs one (G, K) x (K, 9 P) product per group,
    every frame side by side: no loop over bones, vertices or frames.
    """

    vertex_row: NDArray[np.intp]  # (V,)
    weight: F64  # (U, K)
    groups: tuple[tuple[int, int, NDArray[np.intp]], ...]  # (lo, hi, index)


def jacobian_table(mesh: SkinnedMesh, by_runs: bool = False) -> JacobianTable:
    """The mesh's ``JacobianTable``: from its influence table, or (B-Bones, or ``by_runs``) from its
    blend layout's runs, whose B-Bone weights are split between two segment joints."""
    layout = mesh.blend_layout
    v = mesh.vertex_count
    if layout.joints or by_runs:
        runs = layout.runs
        vertex = runs.vertex
        matrix = np.repeat(runs.bone, np.diff(runs.starts))
        weight = layout.scaled
    else:
        table = mesh.influence_table
        used = table.weights != 0.0  # NaN is used: it reaches the vertex
        vertex = np.nonzero(used)[0]
        matrix = table.bones[used]
        with np.errstate(invalid="ignore", over="ignore"):
            weight = (table.weights * mesh.blend_scale[:, None])[used]
    # Each vertex's entries by matrix number, in slots 0, 1, ...: its signature is its row of numbers.
    count = np.bincount(vertex, minlength=v)
    k = max(int(count.max(initial=0)), 1)
    by_vertex = np.lexsort((matrix, vertex))
    vertex, matrix, weight = vertex[by_vertex], matrix[by_vertex], weight[by_vertex]
    first = np.concatenate([[0], np.cumsum(count)])
    slot = np.arange(len(vertex)) - first[vertex]
    key = np.zeros((v, 2 * k))  # signature then weights: equal bit for bit, one row
    key[:, :k] = -1.0
    key[vertex, slot] = matrix
    key[vertex, k + slot] = weight
    raw = np.ascontiguousarray(key).view(np.dtype((np.void, key.itemsize * 2 * k))).ravel()
    _, first_vertex, vertex_row = np.unique(raw, return_index=True, return_inverse=True)
    rows = key[first_vertex]
    # Rows grouped by signature (lexicographic over the matrix numbers).
    order = np.lexsort(rows[:, :k].T[::-1]) if len(rows) else np.zeros(0, dtype=np.intp)
    rows = rows[order]
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    signature = rows[:, :k].astype(np.intp)
    cut = np.flatnonzero((signature[1:] != signature[:-1]).any(axis=1)) + 1
    bounds = np.concatenate([[0], cut, [len(rows)]]).tolist() if len(rows) else [0]
    groups = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        index = signature[lo][signature[lo] >= 0]
        if len(index):
            groups.append((lo, hi, index))
    return JacobianTable(rank[np.asarray(vertex_row).reshape(-1)], np.ascontiguousarray(rows[:, k:]), tuple(groups))


def frame_matrices(mesh: SkinnedMesh, channels: F64) -> tuple[F64, list[tuple[F64, NDArray[np.bool_]]] | None]:
    """(P, R, 4, 4) the armature-space deform matrices of every bone then every B-Bone joint of
    the blend layout at each pose of ``channels``, and the joints per pose (None: no B-Bones)."""
    if not mesh.blend_layout.joints:
        return channels, None
    joints = joint_matrices(mesh, mesh.read_pose.at_each(channels))
    return np.concatenate([channels, np.stack([j for j, _ in joints])], axis=1), joints


def linear_rows(mesh: SkinnedMesh, table: JacobianTable, matrices: F64) -> F64:
    """(U, P, 9) the deform map's linear part at each row of ``table`` (``table.vertex_row``) and pose,
    in mesh space, row-major.

    Blender's linear blend is ``p' = p + a sum_j s_j (D_j p)`` with ``D_j = P^-1 M_j P - I`` and
    ``s_j = w_j / sum w`` (``a / sum w`` is ``SkinnedMesh.blend_scale``); its Jacobian is
    ``I + a sum_j s_j D_j[:3, :3]``, which does not depend on the vertex's position: per slot, the
    vertices gather their matrix's rows (every pose of the batch side by side) and add them weighted.

    Parameters
    ----------
    matrices : (P, R, 4, 4) float64, ``frame_matrices``
    """
    poses = len(matrices)
    # P^-1 M_j P - I: only the 3x3 part matters (the Jacobian has no translation).
    linear = (mesh.armature_to_mesh[:3, :3] @ matrices[..., :3, :3] @ mesh.mesh_to_armature[:3, :3]
              - np.eye(3))  # (P, R, 3, 3)
    per_matrix = np.ascontiguousarray(linear.transpose(1, 0, 2, 3)).reshape(linear.shape[1], 9 * poses)
    v = len(table.weight)
    width = 9 * poses
    out = np.zeros((v, width))

    def products(groups: Sequence[tuple[int, int, NDArray[np.intp]]]) -> None:
        # Rows per product: at most GEMM_SIZE multiply-adds, which OpenBLAS keeps on this thread.
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite matrices reach their vertices
            for lo, hi, index in groups:
                step = max(GEMM_SIZE // (len(index) * width), 1)
                rows_of = per_matrix[index]
                for a in range(lo, hi, step):
                    b = min(a + step, hi)
                    np.matmul(table.weight[a:b, :len(index)], rows_of, out=out[a:b])

    # The groups write disjoint rows: every thread takes its share (matmul releases the GIL).
    threads = thread_count() if v * width >= PARALLEL_FROM else 1
    run_all([partial(products, table.groups[k::threads]) for k in range(threads)])
    rows = out.reshape(v, poses, 9)
    rows[:, :, [0, 4, 8]] += 1.0
    return rows


def _measure(linear: F64) -> tuple[F64, F64]:
    """``smallest_singular_and_det`` of (N, 9) rows in blocks sharing one workspace per thread (no block
    allocates its temporaries afresh); the blocks split between the threads (numpy's loops release the
    GIL: on two cores the measure takes about half the time)."""
    n = len(linear)
    smallest, det = np.empty(n), np.empty(n)
    blocks = list(range(0, n, MEASURE_ROWS))
    threads = min(thread_count(), max(len(blocks), 1))

    def part(first: int) -> None:
        workspace = np.empty((WORKSPACE_ROWS, min(n, MEASURE_ROWS)))
        for lo in blocks[first::threads]:
            hi = min(lo + MEASURE_ROWS, n)
            smallest_singular_and_det(linear[lo:hi], workspace, (smallest[lo:hi], det[lo:hi]))

    run_all([partial(part, k) for k in range(threads)])
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
    #: The mesh's ``jacobian_table`` (built at the first batch unless given: one per mesh serves
    #: every action).
    table: JacobianTable | None = None
    #: For a glTF file: the target playing the file's own clip of this action, and the mesh object's
    #: world matrix (Blender's mesh goes to world space to meet it); None: not compared.
    clip: ClipDrawing | None = None
    world: F64 | None = None
    #: Per frame: the farthest vertex between the clip as the target plays it and Blender's import.
    clip_max: list[float | None] = field(default_factory=list)
    vertex_clip: F64 = field(init=False)
    clip_frame: NDArray[np.float64] = field(init=False)

    def __post_init__(self) -> None:
        v = self.mesh.vertex_count
        self.vertex_clip = np.zeros(v)
        self.clip_frame = np.full(v, np.nan)
        self.vertex_sigma = np.full(v, np.inf)
        self.vertex_det = np.full(v, np.inf)
        self.vertex_divergence = np.zeros(v)
        self.sigma_frame = np.full(v, np.nan)
        self.det_frame = np.full(v, np.nan)
        self.divergence_frame = np.full(v, np.nan)

    def add(self, frames: Sequence[float], channels: F64, prepared: PreparedTarget | None) -> None:
        """Measure a batch of frames: ``channels`` (P, J, 4, 4) Blender's pose at each (in pieces of
        at most ``BATCH_VALUES`` matrix entries, so memory does not grow with the batch).  The
        B-Bones' curves are computed for the whole batch at once (their cost is per bone more than
        per pose)."""
        if not len(frames):
            return
        measured = measurable(self.mesh) and self.mesh.vertex_count > 0
        if measured or (self.target is not None and prepared is not None):
            matrices, joints = frame_matrices(self.mesh, channels)
        else:
            matrices, joints = channels, None
        step = max(1, BATCH_VALUES // max(9 * self.mesh.vertex_count, 1))
        for lo in range(0, len(frames), step):
            hi = lo + step
            self._add(list(frames[lo:hi]), channels[lo:hi], matrices[lo:hi] if measured else None,
                      joints[lo:hi] if joints is not None else None, prepared)

    def _add(self, frames: Sequence[float], channels: F64, matrices: F64 | None,
             joints: list[tuple[F64, NDArray[np.bool_]]] | None, prepared: PreparedTarget | None) -> None:
        size = self.mesh.size()
        self.frames += [float(f) for f in frames]
        if matrices is not None:
            if self.table is None:
                self.table = jacobian_table(self.mesh)
            # One measure over every vertex of every frame of the piece: (V P, 9) rows.
            sigma, det = _measure(linear_rows(self.mesh, self.table, matrices).reshape(-1, 9))
            self._keep(np.asarray(frames, dtype=np.float64), sigma.reshape(-1, len(frames)),
                       det.reshape(-1, len(frames)))
        else:
            self.sigma_min += [float("nan")] * len(frames)
            self.det_min += [float("nan")] * len(frames)
        blender: list[F64] = []

        def blender_positions() -> list[F64]:
            """Blender's mesh at each frame of the piece (numpy's recomputation, spot-checked), once."""
            if not blender:
                poses = self.mesh.read_pose.at_each(channels)
                blender.extend(r.positions for r in recompute_blender_many(self.mesh, poses, joints))
            return blender

        distances = self._engine_distances(channels, prepared, blender_positions)
        self._fold(frames, distances, self.divergence_max, self.vertex_divergence, self.divergence_frame, size)
        if self.clip is not None and self.world is not None:
            local = np.stack(blender_positions())
            self._fold(frames, self.clip.distances(np.asarray(frames, dtype=np.float64), local, self.world),
                       self.clip_max,
                       self.vertex_clip, self.clip_frame, size * world_scale(self.mesh))
        else:
            self.clip_max += [None] * len(frames)

    def _fold(self, frames: Sequence[float], distances: F64 | None, timeline: list[float | None], worst: F64,
              at: F64, size: float) -> None:
        """(P, V) distances (None: not measured) into a timeline and the per-vertex largest relative to ``size``
        (every frame of the piece at once; a vertex keeps the first frame reaching its largest)."""
        if distances is None or not distances.size:
            timeline += [None] * len(frames)
            return
        rel = np.asarray(distances, dtype=np.float64) / size
        timeline += [float(v) for v in rel.max(axis=1)]
        with np.errstate(invalid="ignore"):
            ordered = np.where(np.isnan(rel), -np.inf, rel)  # a NaN never beats a vertex's worst
        first = np.argmax(ordered, axis=0)
        best = ordered[first, np.arange(rel.shape[1])]
        worse = best > worst
        worst[worse] = best[worse]
        at[worse] = np.asarray(frames, dtype=np.float64)[first[worse]]

    def _engine_distances(self, channels: F64, prepared: PreparedTarget | None,
                          blender: Callable[[], list[F64]]) -> F64 | None:
        """(P, V) how far the target draws each vertex from Blender at each pose of ``channels``: one
        blend of the weight differences where that applies, else the target's positions against
        Blender's (``blender``: all the piece's poses blended together)."""
        if self.target is None or prepared is None:
            return None
        many = engine_offsets_many(self.mesh, channels, prepared)
        if many is not None:
            return many
        engine = target_positions_many(self.mesh, channels, prepared)
        with np.errstate(invalid="ignore", over="ignore"):
            out: F64 = np.sqrt(((engine - np.stack(blender())) ** 2).sum(axis=2))
        return np.where(np.isfinite(out), out, np.inf)

    def _keep(self, frames: F64, sigma: F64, det: F64) -> None:
        """Fold a piece's (U, P) measures (rows of ``table``) into the timeline and the per-vertex worsts."""
        assert self.table is not None
        vertex_row = self.table.vertex_row
        with np.errstate(invalid="ignore"):  # every row is some vertex's: the rows' lowest is the vertices'
            self.sigma_min += np.nanmin(sigma, axis=0, initial=np.inf).tolist()
            self.det_min += np.nanmin(det, axis=0, initial=np.inf).tolist()
        for values, worst, at in ((sigma, self.vertex_sigma, self.sigma_frame), (det, self.vertex_det, self.det_frame)):
            # Each row's first lowest frame of the piece (NaN never counts as lower), then its vertices'.
            clean = np.where(np.isnan(values), np.inf, values)
            k = np.argmin(clean, axis=1)
            low = clean[np.arange(clean.shape[0]), k][vertex_row]
            lower = low < worst
            worst[lower] = low[lower]
            at[lower] = frames[k[vertex_row][lower]]

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
    if m.clip is not None:
        far = m.vertex_clip > options.divergence_relative
        if far.any():
            v = int(np.argmax(m.vertex_clip))
            worst = m.worst_frames(m.clip_max, lowest=False)
            distance = m.vertex_clip[v] * m.mesh.size() * world_scale(m.mesh)
            findings.append(Finding(
                "animation-clip-divergence", "WARNING",
                f"action '{m.action}': {target} playing the file's own clip (its interpolation of the file's keys, "
                f"at frame / {m.clip.fps:g} fps) draws {int(far.sum())} vertices away from Blender's import of "
                f"it; worst vertex {v} at frame {float(m.clip_frame[v]):g}, {distance:.3g} away "
                f"({m.vertex_clip[v]:.2%} of the mesh size); worst frames {', '.join(f'{f:g}' for f in worst)}. "
                "Between the file's keys Blender interpolates its own keys (quaternion components one by one, "
                "Bezier handles) where the engine slerps or steps: key the clip at every frame (sampled export) "
                "for both to agree",
                int(far.sum()), tuple(np.flatnonzero(far).tolist()), _bones_at(m.mesh, v),
                details={"action": m.action, "target": target, "animation": m.clip.anim, "fps": m.clip.fps,
                         "frame": float(m.clip_frame[v]), "worst_vertex": v,
                         "worst_relative": float(m.vertex_clip[v]), "worst_frames": worst}))
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
                         "engine_divergence": m.worst_frames(m.divergence_max, False),
                         "clip_divergence": m.worst_frames(m.clip_max, False)},
        "timeline": {"frame": list(m.frames), "sigma_min": finite(m.sigma_min), "det_min": finite(m.det_min),
                     "engine_divergence_max": finite(m.divergence_max), "clip_divergence_max": finite(m.clip_max)},
        "spot_checks": [{"frame": f, "max_numpy_vs_blender_relative": None if not np.isfinite(d) else d}
                        for f, d in m.spot_checks],
    }
    return findings, entry
