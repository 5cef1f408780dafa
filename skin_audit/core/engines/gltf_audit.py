# SPDX-License-Identifier: GPL-3.0-or-later
"""A glTF file audited against what Blender made of it: the file's own findings, the
influences Blender's importer changed, and the target's drawing of the file against
Blender's evaluated mesh at the same time.

Vertex correspondence follows Blender's glTF importer (``io_scene_gltf2/blender/imp/mesh.py``,
``do_primitives``; merge vertices off, the default) and is verified, never assumed: each glTF
mesh becomes one Blender mesh, its primitives (those with POSITION) one after the other, each
contributing the rows its indices use, in ascending row order (``np.unique`` of the indices;
rows no index names are not imported), and one face per triangle.  The importer then moves the
mesh data into a bind pose it guesses (``skin_into_bind_pose``, on by default), so Blender's rest
positions are not the file's POSITION: the pairing is verified on the faces (every triangle of
the file, through the row order, is a face of Blender's mesh and the reverse), which no space
change alters.  The engine comparison itself is made where both are drawn, in world space:
Blender's evaluated mesh against the target's skinning of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from ..codes import codes_of
from ..findings import Finding
from ..gltf.document import GltfDocument, read_accessor_stored
from ..gltf.skin import SkinnedPrimitive, skin_joints
from .babylon import VANISHING_VERTICES
from .divergence import divergence
from .gltf_path import EnginePositions, stacked_influences
from .targets import Target

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: A weight Blender imported differs from the stored one by more than float32 rounding.
WEIGHT_CHANGED = 1e-6
#: Mesh compression Blender's importer decodes (the bundled Draco library) and our reader does not.
DRACO = "KHR_draco_mesh_compression"


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
    #: (F, 3) vertex indices of the mesh's triangular faces (the importer writes triangles only);
    #: None when not read.
    faces: I64 | None = None


@dataclass(frozen=True)
class ImportedPrimitive:
    """How Blender's importer lays out one primitive (with POSITION) of a glTF mesh."""

    primitive: int
    #: (R,) the file rows that became Blender vertices, in Blender's order (used indices, ascending).
    rows: I64
    #: (T, 3) the triangles as file rows (modes 4, 5 and 6 unrolled as the importer does).
    triangles: I64
    #: Draco-compressed: Blender decodes it, our reader cannot, so its rows are unknown here.
    draco: bool = False


def _triangles(indices: I64, mode: int) -> I64:
    """(T, 3) triangles of ``indices`` drawn in ``mode`` (4 list, 5 strip, 6 fan), as the importer
    unrolls them (``points_edges_tris``); (0, 3) for points and lines."""
    n = len(indices)
    if mode == 4:
        return indices[: n - n % 3].reshape(-1, 3)
    if mode in (5, 6) and n >= 3:
        k = np.arange(n - 2)
        if mode == 6:
            return np.column_stack([np.full(n - 2, indices[0]), indices[1:-1], indices[2:]])
        even = k % 2 == 0  # strip: odd triangles keep the winding by swapping their last two
        second = np.where(even, indices[k + 1], indices[k + 2])
        third = np.where(even, indices[k + 2], indices[k + 1])
        return np.column_stack([indices[:-2], second, third])
    return np.zeros((0, 3), dtype=np.int64)


def imported_layout(doc: GltfDocument, mesh: int) -> list[ImportedPrimitive]:
    """Every primitive with POSITION of ``meshes[mesh]``, in order, as Blender's importer makes
    vertices of it (see the module docstring)."""
    out = []
    for p, prim in enumerate(doc.item("meshes", mesh, "mesh").get("primitives", [])):
        attrs = prim.get("attributes", {})
        if "POSITION" not in attrs:
            continue  # the importer skips it
        empty = np.zeros(0, dtype=np.int64)
        if DRACO in (prim.get("extensions") or {}):
            out.append(ImportedPrimitive(p, empty, np.zeros((0, 3), dtype=np.int64), draco=True))
            continue
        where = f"mesh {mesh} primitive {p}"
        if "indices" in prim:
            indices = read_accessor_stored(doc, prim["indices"], where + " indices").reshape(-1).astype(np.int64)
        else:
            count = int(doc.item("accessors", attrs["POSITION"], where + " POSITION").get("count", 0))
            indices = np.arange(count, dtype=np.int64)
        mode = int(prim.get("mode", 4))
        tris = _triangles(indices, mode)
        # The importer keeps the rows its index list names (strips and fans unrolled first).
        used = tris.reshape(-1) if mode in (5, 6) else indices
        out.append(ImportedPrimitive(p, np.unique(used), tris))
    return out


@dataclass(frozen=True)
class NodeMatch:
    """The skinned glTF node an imported object came from, and whether rows correspond."""

    node: int | None
    primitives: tuple[SkinnedPrimitive, ...]
    #: Blender vertex index of each primitive's first row.
    offsets: tuple[int, ...]
    reliable: bool
    why: str
    #: (R,) for each of ``primitives``, the file rows that are Blender's vertices ``offset, offset + 1, ...``.
    rows: tuple[I64, ...] = ()
    #: Blender vertices from primitives without JOINTS/WEIGHTS (Blender skins them to the first joint;
    #: the file has no influences for them): not compared.
    unskinned: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def blender_index(self, prim: SkinnedPrimitive) -> I64:
        """(R_file,) Blender vertex of each row of ``prim``'s POSITION, -1 for rows not imported."""
        out = np.full(len(prim.positions), -1, dtype=np.int64)
        for p, off, rows in zip(self.primitives, self.offsets, self.rows, strict=True):
            if (p.node, p.primitive) == (prim.node, prim.primitive):
                out[rows] = off + np.arange(len(rows))
        return out


def _sorted_faces(faces: I64) -> I64:
    """(F', 3) each face's vertices sorted, degenerate faces dropped (each face as often as listed)."""
    s = np.sort(faces.reshape(-1, 3), axis=1)
    out: I64 = s[(s[:, 0] != s[:, 1]) & (s[:, 1] != s[:, 2])]
    return out


def _same_faces(ours: I64, theirs: I64) -> bool:
    """Whether two (F, 3) face lists hold the same faces, each taken once whatever its vertices' order
    (degenerate faces left out): compared as one integer key per face where the keys fit in 63 bits."""
    a, b = _sorted_faces(ours), _sorted_faces(theirs)
    if not len(a) or not len(b):
        return len(a) == len(b)
    low = min(int(a.min()), int(b.min()))
    base = max(int(a.max()), int(b.max())) - low + 1
    if base ** 3 >= 2 ** 62:  # too many vertices for one key: the rows themselves
        ra, rb = np.unique(a, axis=0), np.unique(b, axis=0)
        return ra.shape == rb.shape and bool(np.array_equal(ra, rb))

    def keys(s: I64) -> I64:
        k = s.astype(np.int64) - low
        out: I64 = np.unique((k[:, 0] * base + k[:, 1]) * base + k[:, 2])
        return out

    ka, kb = keys(a), keys(b)
    return ka.shape == kb.shape and bool(np.array_equal(ka, kb))


def _node_layout(doc: GltfDocument, node: int, imported: ImportedMesh, prims: list[SkinnedPrimitive]
                 ) -> tuple[NodeMatch | None, str]:
    """``imported`` paired with ``node`` by the importer's order, or None and why not."""
    mesh = int(doc.items("nodes")[node]["mesh"])
    layout = imported_layout(doc, mesh)
    if any(lp.draco for lp in layout):
        return None, (f"node {node}'s mesh is Draco-compressed ({DRACO}): Blender's importer decodes it, "
                      "skin_audit's glTF reader does not, so the rows Blender made cannot be paired with the file's")
    count = sum(len(lp.rows) for lp in layout)
    if count != len(imported.rest):
        return None, (f"node {node}'s mesh makes {count} vertices in the importer's order (each primitive's used "
                      f"rows), Blender's mesh has {len(imported.rest)} (merged on import, or edited since)")
    skinned = {p.primitive: p for p in prims if p.node == node}
    offsets = np.cumsum([0] + [len(lp.rows) for lp in layout])
    if imported.faces is not None:
        file_faces = []
        for lp, off in zip(layout, offsets[:-1], strict=False):
            index = np.full(int(lp.rows.max(initial=-1)) + 1, -1, dtype=np.int64)
            index[lp.rows] = off + np.arange(len(lp.rows))
            file_faces.append(index[lp.triangles])
        ours = np.concatenate(file_faces) if file_faces else np.zeros((0, 3), dtype=np.int64)
        if not _same_faces(ours, np.asarray(imported.faces, dtype=np.int64)):
            return None, (f"node {node}'s mesh has as many vertices as Blender's mesh but not the same faces in "
                          "the importer's order (vertices merged or reordered)")
    chosen = [(skinned[lp.primitive], int(off), lp.rows) for lp, off in zip(layout, offsets[:-1], strict=False)
              if lp.primitive in skinned]
    unskinned = [np.arange(off, off + len(lp.rows)) for lp, off in zip(layout, offsets[:-1], strict=False)
                 if lp.primitive not in skinned]
    return NodeMatch(node, tuple(c[0] for c in chosen), tuple(c[1] for c in chosen), True, "",
                     tuple(c[2] for c in chosen),
                     np.concatenate(unskinned).astype(np.int64) if unskinned else np.zeros(0, dtype=np.int64)), ""


def match_node(doc: GltfDocument, prims: list[SkinnedPrimitive], imported: ImportedMesh,
               node_names: dict[int, str]) -> NodeMatch:
    """Pair ``imported`` with the skinned node it came from, by the importer's vertex order,
    verified on the faces (the module docstring)."""
    nodes = sorted({p.node for p in prims})
    named = [n for n in nodes if node_names.get(n) == imported.object]
    skins = {p.node: p.skin for p in prims}
    # The importer makes one vertex group per joint, in skin order, named after the joint's bone.
    grouped = [n for n in nodes if n not in named
               and imported.group_names[:len(skin_joints(doc, skins[n]))] == bone_names(doc, skins[n])]
    # Name first (the importer names objects after nodes), then the node whose skin's joints name the
    # object's vertex groups (one mesh drawn by many nodes with their own skins), then any node that fits.
    reasons = []
    for n in named + grouped + [n for n in nodes if n not in named and n not in grouped]:
        match, why = _node_layout(doc, n, imported, prims)
        if match is not None:
            return match
        reasons.append(why)
    why = (reasons[0] if named or len(reasons) == 1 else
           f"no skinned node of the file pairs with '{imported.object}' by the importer's vertex order "
           f"({len(imported.rest)} vertices): {'; '.join(reasons[:3])}") if reasons else \
        "the file has no skinned node"
    return NodeMatch(named[0] if named else None, (), (), False, why)


def paired_size(match: NodeMatch) -> float:
    """Largest bounding-box side of the file's paired rows (world units at the bind pose; 1 when empty)."""
    rows = [p.positions[r] for p, r in zip(match.primitives, match.rows, strict=True) if len(r)]
    if not rows:
        return 1.0
    side = float(np.ptp(np.concatenate(rows), axis=0).max())
    return side if np.isfinite(side) and side > 0 else 1.0


def bone_names(doc: GltfDocument, skin: int) -> tuple[str, ...]:
    """The names Blender's importer gives the bones of ``skin``'s joints, in joint order: the node's
    name, else ``Node_<index>`` (``vnode.default_name``)."""
    nodes = doc.items("nodes")
    return tuple(str(nodes[j].get("name") or f"Node_{j}") for j in skin_joints(doc, skin))


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
    names = list(bone_names(doc, match.primitives[0].skin))
    index = {g: i for i, g in enumerate(imported.group_names)}
    if any(n not in index for n in names):
        return None  # bones renamed on import: the groups cannot be read back per joint
    v = len(imported.rest)
    stored = np.zeros((v, len(names)))
    first_set = np.zeros((v, len(names)))
    merged = np.zeros(v, dtype=bool)
    compared = np.zeros(v, dtype=bool)
    for prim, off, kept in zip(match.primitives, match.offsets, match.rows, strict=True):
        j, w, _ = stacked_influences(prim)
        j, w = j[kept], w[kept]
        rows = slice(off, off + len(kept))
        stored[rows] = _dense(j, w, len(names))
        first_set[rows] = _dense(j[:, :4], w[:, :4], len(names))
        merged[rows] = (w[:, 4:] != 0).any(axis=1)
        compared[rows] = True
    got = np.stack([imported.weights[index[n]] for n in names], axis=1).astype(np.float64)
    changed = compared & (np.abs(got - stored).max(axis=1, initial=0.0) > WEIGHT_CHANGED)
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
    blender = gltf_from_blender(imported.evaluated_world)
    out = np.zeros(len(blender))
    for p, off, rows in zip(match.primitives, match.offsets, match.rows, strict=True):
        out[off:off + len(rows)] = divergence(drawn[(p.node, p.primitive)][rows], blender[off:off + len(rows)])
    return out


def place_file_findings(findings: list[Finding], match: NodeMatch) -> list[Finding]:
    """The file's findings about ``match``'s primitives, their rows as Blender vertex indices
    (or without vertices, saying why, when rows do not correspond)."""
    labels = {p.label: match.blender_index(p) for p in match.primitives}
    out = []
    for f in findings:
        where = str(f.details.get("where", ""))
        if match.node is None or not where.startswith(f"node {match.node} "):
            continue
        if where in labels:
            index = labels[where]
            # A row no index uses was not imported: it has no Blender vertex (the count keeps it).
            placed = [int(index[v]) for v in f.vertices if 0 <= v < len(index) and index[v] >= 0]
            out.append(replace(f, vertices=tuple(placed)))
        else:
            out.append(replace(f, vertices=(), details={**f.details, "vertex_order": "unknown"}))
    return out


def unmatched_finding(obj: str, why: str, target: Target) -> Finding:
    """INFO: the file was not compared with Blender for ``obj``, and why."""
    return Finding(
        code="gltf-not-compared",
        severity="INFO",
        message=(f"'{obj}': {why}; where {target.name} draws the file is not compared with "
                 "Blender's mesh rather than guessed"),
        count=0,
        details={"target": target.name, "reason": why},
    )


def unskinned_finding(obj: str, match: NodeMatch, target: Target) -> Finding:
    """INFO: the vertices of primitives without JOINTS/WEIGHTS in a skinned node are not compared
    (Blender's importer gives them weight 1 on the skin's first joint; the file gives no influences
    to model an engine with)."""
    n = len(match.unskinned)
    why = (f"{n} vertices come from primitives of node {match.node} without JOINTS/WEIGHTS: Blender's importer "
           "gives them weight 1 on the skin's first joint, the file has no influences for them (what an engine "
           "does with such a primitive is not modelled), so they are not compared")
    return Finding(code="gltf-not-compared", severity="INFO",
                   message=f"'{obj}': {why}; the other vertices are", count=n,
                   vertices=tuple(int(v) for v in match.unskinned),
                   details={"target": target.name, "reason": why, "partial": True})


def compressed_reason(extensions: tuple[str, ...]) -> str:
    """Why a file whose meshes are compressed is compared with nothing but what Blender imported."""
    names = ", ".join(extensions)
    return (f"the file requires {names}: Blender's importer decoded it and that import is audited, but "
            f"skin_audit's glTF reader does not decode {names}, so the file's own checks (stored weights, "
            f"joints, keyframes) are skipped too (audit an uncompressed export for them)")


def target_file_findings(doc: GltfDocument, target: Target, clip: str | int | None, time: float | None
                         ) -> list[Finding]:
    """What ``target`` itself says about the file at ``time`` (Babylon: vanishing vertices, shading of
    unnormalised weights, CPU/GPU paths), per primitive (``details.where`` is its label, the rows its
    own), for :func:`place_file_findings`; nothing for targets without such findings."""
    return [] if target.file_findings is None else target.file_findings(doc, clip, time)


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
GLTF_CODES = codes_of("gltf-file", "gltf", "babylon")
