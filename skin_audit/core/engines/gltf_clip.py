# SPDX-License-Identifier: GPL-3.0-or-later
"""A target playing a glTF file's own clip: where it draws each imported vertex at the time of a frame.

Blender's importer turns each animation into an action keyed at frames (``t * fps``), which Blender
then interpolates with its F-curves (quaternion components one by one, Bezier or linear); an engine
plays the file itself, interpolating the samplers by its own rule (three.js: ``slerpFlat``, its
cubic-spline interpolant, the key held for STEP).  Between the file's keys the two poses differ;
``ClipDrawing`` computes the engine's side at many times at once (samplers read once, every time
sampled together, the skins blended for all times in one product per joint) so the animation audit
can set it beside Blender's mesh at every frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..gltf.animation import ClipChannel, clip_channels, sample_stacked
from ..gltf.document import GltfDocument
from ..gltf.scene import NodeTransforms, node_parents, quaternion_matrices, rest_transforms, world_matrices
from ..gltf.skin import SkinnedPrimitive, inverse_bind_matrices, skin_joints
from ..maths.bone_runs import BoneRuns, blend_runs_many, gather_points, runs_from_table
from .gltf_audit import NodeMatch
from .gltf_path import stacked_influences
from .targets import Target
from .weights import engine_weights

F64 = NDArray[np.float64]


def clip_world_matrices(parents: NDArray[np.intp], rest: NodeTransforms, channels: tuple[ClipChannel, ...],
                        times: F64, target: Target) -> F64:
    """(T, N, 4, 4) every node's world matrix with the clip sampled by ``target``'s rule at each time."""
    count, n = len(times), len(parents)
    translation = np.broadcast_to(rest.translation, (count, n, 3)).copy()
    rotation = np.broadcast_to(rest.rotation, (count, n, 4)).copy()
    scale = np.broadcast_to(rest.scale, (count, n, 3)).copy()
    into = {"translation": translation, "rotation": rotation, "scale": scale}
    for path, interpolation, key_times, group in _channel_groups(channels):
        # Every channel of the group sampled at every time at once: (T, n, C).
        values = sample_stacked(key_times, np.stack([ch.sampler.values for ch in group], axis=1), interpolation,
                                times, path, target.interpolation)
        into[path][:, [ch.node for ch in group]] = values
    local = np.tile(np.eye(4), (count, n, 1, 1))
    turn = quaternion_matrices(rotation.reshape(-1, 4), target.rotation).reshape(count, n, 3, 3)
    local[:, :, :3, :3] = turn * scale[:, :, None, :]
    local[:, :, :3, 3] = translation
    local[:, rest.has_matrix] = rest.matrix[rest.has_matrix]
    return world_matrices(parents, local)


def _channel_groups(channels: tuple[ClipChannel, ...]
                    ) -> list[tuple[str, str, F64, list[ClipChannel]]]:
    """``channels`` grouped by path, interpolation and key times (a clip's channels mostly share one
    input); when two channels drive the same node's path, one group each in order (the later wins)."""
    if len({(ch.node, ch.path) for ch in channels}) < len(channels):
        return [(ch.path, ch.sampler.interpolation, ch.sampler.times, [ch]) for ch in channels]
    groups: dict[tuple[str, str, bytes], list[ClipChannel]] = {}
    for ch in channels:
        groups.setdefault((ch.path, ch.sampler.interpolation, ch.sampler.times.tobytes()), []).append(ch)
    return [(g[0].path, g[0].sampler.interpolation, g[0].sampler.times, g) for g in groups.values()]


@dataclass(frozen=True)
class _Primitive:
    prim: SkinnedPrimitive
    joints: list[int]  # skin.joints (nodes)
    ibm: F64  # (J, 4, 4)
    runs: BoneRuns
    gathered: F64
    rest: F64  # (V, 3)
    stay: NDArray[np.bool_]
    invalid: NDArray[np.bool_]


@dataclass(frozen=True)
class ClipDrawing:
    """Where ``target`` draws one imported mesh while it plays animation ``anim`` of the file."""

    target: Target
    anim: int
    fps: float
    match: NodeMatch
    parents: NDArray[np.intp]
    rest: NodeTransforms
    channels: tuple[ClipChannel, ...]
    primitives: tuple[_Primitive, ...]

    def drawn(self, frames: F64) -> list[F64]:
        """Per primitive of the match: (T, V_p, 3) its rows drawn at ``frame / fps`` seconds (world space)."""
        times = np.asarray(frames, dtype=np.float64) / self.fps
        world = clip_world_matrices(self.parents, self.rest, self.channels, times, self.target)
        out = []
        for p in self.primitives:
            # tjab,jbc->tjac: each joint's world matrix at each time times its inverse bind matrix.
            skinning = np.einsum("tjab,jbc->tjac", world[:, p.joints], p.ibm)
            # Every time's sums go straight into one (T, V, 3) array (no per-time stack and transpose).
            positions = np.zeros((len(times), len(p.rest), 3))
            blend_runs_many(p.runs, p.gathered, skinning, add_to=list(positions))
            positions[:, p.invalid] = np.nan
            positions[:, p.stay] = p.rest[p.stay]
            out.append(positions)
        return out

    def distances(self, frames: F64, blender_local: F64, object_world: F64) -> F64:
        """(T, V) how far the target draws each Blender vertex from Blender's mesh at each frame:
        ``blender_local`` (T, V, 3) in the mesh object's space, ``object_world`` (4, 4) its world matrix
        (vertices the file does not skin: 0)."""
        drawn = self.drawn(frames)
        # Object space to world to glTF's axes (gltf_from_blender) as one affine map, every frame at once.
        to_gltf = _BLENDER_TO_GLTF @ np.asarray(object_world, dtype=np.float64)
        b = np.asarray(blender_local, dtype=np.float64)
        blender = b @ to_gltf[:3, :3].T + to_gltf[:3, 3]
        out = np.zeros(b.shape[:2])
        for positions, off, rows in zip(drawn, self.match.offsets, self.match.rows, strict=True):
            mine = positions if len(rows) == positions.shape[1] and _ascending(rows) else positions[:, rows]
            with np.errstate(invalid="ignore", over="ignore"):
                mine -= blender[:, off:off + len(rows)]
                d = np.sqrt(np.einsum("tvc,tvc->tv", mine, mine))  # tvc,tvc->tv: squared length per vertex
            out[:, off:off + len(rows)] = np.where(np.isfinite(d), d, np.inf)  # as ``divergence``
        return out


#: glTF's axes from Blender's (``gltf_from_blender``): x, z, -y.
_BLENDER_TO_GLTF = np.array([[1.0, 0, 0, 0], [0, 0, 1.0, 0], [0, -1.0, 0, 0], [0, 0, 0, 1.0]])


def _ascending(rows: NDArray[np.int64]) -> bool:
    """True when ``rows`` are 0, 1, 2, ...: the rows already in the primitive's order."""
    return bool(len(rows) == 0 or (rows[0] == 0 and np.all(np.diff(rows) == 1)))


@dataclass
class ClipFile:
    """What every clip of one document shares, read once: the nodes' rest transforms and parents, and
    each animation's channels (its samplers decoded) when first asked for."""

    doc: GltfDocument
    rest: NodeTransforms
    parents: NDArray[np.intp]
    decoded: dict[int, tuple[ClipChannel, ...]]

    def channels(self, anim: int) -> tuple[ClipChannel, ...]:
        if anim not in self.decoded:
            self.decoded[anim] = clip_channels(self.doc, anim, self.rest)
        return self.decoded[anim]


def clip_file(doc: GltfDocument) -> ClipFile:
    """The ``ClipFile`` of ``doc`` (no animation decoded yet)."""
    return ClipFile(doc, rest_transforms(doc), node_parents(doc), {})


def prepare_primitives(doc: GltfDocument, target: Target, match: NodeMatch) -> tuple[_Primitive, ...] | None:
    """What ``target`` skins ``match``'s primitives with, once for every clip; None when the rows do not
    correspond or a primitive has morph targets (their animated weights are not drawn here)."""
    if not match.reliable or any(len(p.morph_positions) for p in match.primitives):
        return None
    prims = []
    for prim in match.primitives:
        joints, weights, ctype = stacked_influences(prim)
        j, w = engine_weights(joints, weights, target, set_width=4, weight_component_type=ctype)
        j, w = np.asarray(j), np.asarray(w, dtype=np.float64)
        nodes = skin_joints(doc, prim.skin)
        valid = (j >= 0) & (j < len(nodes))
        runs = runs_from_table(np.where(valid, j, 0), np.where(valid, w, 0.0))
        stay = ~np.any(w != 0.0, axis=1) if target.zero_weight_rule == "stay" else np.zeros(len(w), dtype=bool)
        invalid = np.any((w != 0.0) & ~valid, axis=1)
        prims.append(_Primitive(prim, nodes, inverse_bind_matrices(doc, prim.skin), runs,
                                gather_points(runs, prim.positions), np.asarray(prim.positions, dtype=np.float64),
                                stay, invalid))
    return tuple(prims)


def clip_drawing(doc: GltfDocument, target: Target, anim: int, fps: float, match: NodeMatch,
                 primitives: tuple[_Primitive, ...] | None, file: ClipFile | None = None) -> ClipDrawing | None:
    """The ``ClipDrawing`` of animation ``anim`` on ``match``'s ``primitives`` (``prepare_primitives``;
    None: not drawn); ``file``: ``clip_file(doc)`` shared by every clip and mesh (built here when None)."""
    if primitives is None:
        return None
    shared = clip_file(doc) if file is None else file
    return ClipDrawing(target, anim, fps, match, shared.parents, shared.rest, shared.channels(anim), primitives)
