# SPDX-License-Identifier: GPL-3.0-or-later
"""A glTF file audited against what Blender made of it: the file's own findings, the
influences Blender's importer changed, and the target's drawing of the file against
Blender's evaluated mesh at the same time.

Vertex correspondence is never assumed.  Blender's glTF importer (5.0.1, merge vertices
off, the default) writes each glTF mesh as one Blender mesh, its primitives' POSITION
rows one after the other in primitive order, converted from Y up to Z up.  A Blender
object is paired with a skinned glTF node only when that holds on the data: the same
vertex count and every rest position within float32 rounding of the converted POSITION.
Otherwise the comparison is not made and a finding says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..findings import Finding
from ..gltf.document import GltfDocument
from ..gltf.skin import SkinnedPrimitive, skin_joints
from .babylon import FINDING_CODES as BABYLON_CODES
from .babylon import VANISHING_VERTICES, babylon_gltf_positions
from .divergence import divergence
from .gltf_path import EnginePositions, stacked_influences
from .targets import Target

F64 = NDArray[np.float64]

#: Rest positions of a paired object may differ from the file's by float32 rounding of the
#: axis conversion; this fraction of the mesh size is far above it (1e-7) and far below
#: any real mismatch between two meshes.
CORRESPONDENCE_RELATIVE = 1e-5
#: A weight Blender imported differs from the stored one by more than float32 rounding.
WEIGHT_CHANGED = 1e-6


def gltf_from_blender(p: F64) -> F64:
    """(V, 3) Blender's Z-up coordinates as glTF's Y-up ones (the importer's conversion undone)."""
    out: F64 = np.column_stack([p[:, 0], p[:, 2], -p[:, 1]])
    return out


@dataclass(frozen=True)
class ImportedMesh:
    """What Blender holds for one imported skinned mesh object."""

    object: str
    rest: F64  # (V, 3) mesh data positions (object space, Blender axes)
    evaluated_world: F64  # (V, 3) evaluated mesh in world space, Blender axes
    group_names: tuple[str, ...]
    weights: NDArray[np.float32]  # (G, V)


@dataclass(frozen=True)
class NodeMatch:
    """The skinned glTF node an imported object came from, and whether rows correspond."""

    node: int | None
    primitives: tuple[SkinnedPrimitive, ...]
    #: Blender vertex index of each primitive's first row.
    offsets: tuple[int, ...]
    reliable: bool
    why: str


def match_node(doc: GltfDocument, prims: list[SkinnedPrimitive], imported: ImportedMesh,
               node_names: dict[int, str]) -> NodeMatch:
    """Pair ``imported`` with the skinned node it came from, verified on the rest positions."""
    by_node: dict[int, list[SkinnedPrimitive]] = {}
    for p in prims:
        by_node.setdefault(p.node, []).append(p)
    named = [n for n in by_node if node_names.get(n) == imported.object]
    # Name first (the importer names objects after nodes), then any node whose data fits.
    candidates = named + [n for n in by_node if n not in named]
    size = max(float(np.ptp(imported.rest, axis=0).max()) if len(imported.rest) else 1.0, 1e-6)
    for n in candidates:
        group = sorted(by_node[n], key=lambda p: p.primitive)
        stacked = np.concatenate([p.positions for p in group])
        if len(stacked) != len(imported.rest):
            continue
        if np.abs(gltf_from_blender(imported.rest) - stacked).max(initial=0.0) <= CORRESPONDENCE_RELATIVE * size:
            offsets = tuple(int(x) for x in np.cumsum([0] + [len(p.positions) for p in group])[:-1])
            return NodeMatch(n, tuple(group), offsets, True, "")
    why = (f"no skinned node of the file has {len(imported.rest)} vertices at the positions of "
           f"'{imported.object}' in primitive order (Blender's importer merged or reordered them)")
    return NodeMatch(named[0] if named else None, (), (), False, why)


def _dense(joints: NDArray[np.int64], weights: F64, count: int) -> F64:
    """(V, J) weight per joint slot; a joint listed twice keeps its last weight, as Blender's importer
    does (``vertex_group.add(..., 'REPLACE')``)."""
    out = np.zeros((len(joints), count))
    rows = np.arange(len(joints))
    for k in range(joints.shape[1]):
        j, w = joints[:, k], weights[:, k]
        ok = (w != 0) & (j >= 0) & (j < count)
        out[rows[ok], j[ok]] = w[ok]
    return out


def importer_changes(doc: GltfDocument, match: NodeMatch, imported: ImportedMesh, target: Target) -> Finding | None:
    """``gltf-blender-changes-weights``: vertices whose imported vertex groups differ from the stored
    influences, each cause counted (clamped above 1, sets merged, all-zero given weight 1)."""
    if not match.reliable:
        return None
    skin = match.primitives[0].skin
    joint_nodes = skin_joints(doc, skin)
    names = [str(doc.items("nodes")[n].get("name", "")) for n in joint_nodes]
    index = {g: i for i, g in enumerate(imported.group_names)}
    if any(n not in index for n in names):
        return None  # bones renamed on import: the groups cannot be read back per joint
    v = len(imported.rest)
    stored = np.zeros((v, len(names)))
    first_set = np.zeros((v, len(names)))
    merged = np.zeros(v, dtype=bool)
    for prim, off in zip(match.primitives, match.offsets, strict=True):
        j, w, _ = stacked_influences(prim)
        rows = slice(off, off + len(prim.positions))
        stored[rows] = _dense(j, w, len(names))
        first_set[rows] = _dense(j[:, :4], w[:, :4], len(names))
        merged[rows] = (w[:, 4:] != 0).any(axis=1)
    got = np.stack([imported.weights[index[n]] for n in names], axis=1).astype(np.float64)
    changed = np.abs(got - stored).max(axis=1, initial=0.0) > WEIGHT_CHANGED
    if not changed.any():
        return None
    clamped = changed & (stored > 1.0 + WEIGHT_CHANGED).any(axis=1)
    zero = changed & ~(stored != 0).any(axis=1)
    merged &= changed & ~clamped & ~zero
    other = changed & ~clamped & ~zero & ~merged
    parts = [f"{int(m.sum())} {what}" for m, what in (
        (clamped, "clamped to 1 (stored above 1)"), (merged, f"merged from every JOINTS/WEIGHTS set "
                                                             f"({target.name} reads {target.reads_sets or 'all'})"),
        (zero, "stored with all-zero weights, given weight 1 on their first joint"), (other, "changed otherwise"))
        if m.any()]
    where = np.flatnonzero(changed)
    return Finding(
        code="gltf-blender-changes-weights",
        severity="WARNING",
        message=(f"Blender shows this file differently from engines: its glTF importer changed the weights of "
                 f"{int(changed.sum())} vertices of '{imported.object}' ({'; '.join(parts)}); {target.name} reads "
                 "the file as stored"),
        count=int(changed.sum()),
        vertices=tuple(int(i) for i in where),
        details={"target": target.name, "target_verified": target.verified, "clamped": int(clamped.sum()),
                 "merged": int(merged.sum()), "all_zero": int(zero.sum()), "other": int(other.sum()),
                 "max_weight_change": float(np.abs(got - stored)[changed].max())},
    )


def file_divergence(match: NodeMatch, engine: list[EnginePositions], imported: ImportedMesh) -> F64 | None:
    """(V,) distance between where the target draws the file and Blender's evaluated mesh, per Blender
    vertex; None when rows do not correspond."""
    if not match.reliable:
        return None
    drawn = {(e.primitive.node, e.primitive.primitive): e.positions for e in engine}
    stacked = np.concatenate([drawn[(p.node, p.primitive)] for p in match.primitives])
    return divergence(stacked, gltf_from_blender(imported.evaluated_world))


def place_file_findings(findings: list[Finding], match: NodeMatch) -> list[Finding]:
    """The file's findings about ``match``'s primitives, their rows as Blender vertex indices
    (or without vertices, saying why, when rows do not correspond)."""
    labels = {p.label: off for p, off in zip(match.primitives, match.offsets, strict=True)}
    out = []
    for f in findings:
        where = str(f.details.get("where", ""))
        if match.node is None or not where.startswith(f"node {match.node} "):
            continue
        if where in labels:
            out.append(replace(f, vertices=tuple(labels[where] + v for v in f.vertices)))
        else:
            out.append(replace(f, vertices=(), details={**f.details, "vertex_order": "unknown"}))
    return out


def unmatched_finding(imported: ImportedMesh, match: NodeMatch, target: Target) -> Finding:
    """INFO: the file was not compared with Blender for this object, and why."""
    return Finding(
        code="gltf-not-compared",
        severity="INFO",
        message=(f"'{imported.object}': {match.why}; where {target.name} draws the file is not compared with "
                 "Blender's mesh rather than guessed"),
        count=0,
        details={"target": target.name, "reason": match.why},
    )


def target_file_findings(doc: GltfDocument, target: Target, clip: str | int | None, time: float | None
                         ) -> list[Finding]:
    """What ``target`` itself says about the file at ``time`` (Babylon: vanishing vertices, shading of
    unnormalised weights, CPU/GPU paths), per primitive (``details.where`` is its label, the rows its
    own), for :func:`place_file_findings`; nothing for targets without such findings."""
    if target.name != "babylon":
        return []
    return [f for b in babylon_gltf_positions(doc, clip, time) for f in b.findings]


def drop_vanished(d: F64, found: list[Finding]) -> F64:
    """(V,) ``d`` with the non-finite distance of each vertex a vanishing finding names set to 0.

    A vertex the engine does not draw has no distance to Blender's; ``babylon-vertex-vanishes``
    reports it, so it is not also a ``non-finite-result`` (whose advice, a bone scaled to zero,
    would mislead).  Any other non-finite distance stays for that check.
    """
    rows = np.array(sorted({v for f in found if f.code == VANISHING_VERTICES for v in f.vertices}), dtype=np.intp)
    rows = rows[(rows >= 0) & (rows < len(d))]
    out = d.copy()
    out[rows] = np.where(np.isfinite(d[rows]), d[rows], 0.0)
    return out


#: Every code a glTF input can add to a mesh or rig entry (file checks, importer changes, the pairing,
#: and the target's own findings about the file).
GLTF_CODES = frozenset({
    "gltf-weights-not-normalised", "gltf-joint-out-of-range", "gltf-joint-repeated", "gltf-weight-negative",
    "gltf-joint-on-zero-weight", "gltf-rotation-not-unit", "gltf-blender-clamps-weight", "gltf-blender-merges-sets",
    "gltf-blender-changes-weights", "gltf-not-compared", *BABYLON_CODES,
    "gltf-animation-time-negative", "gltf-draco-undecodable", "gltf-uri-outside-folder",
})
