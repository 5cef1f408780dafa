# SPDX-License-Identifier: GPL-3.0-or-later
"""A skinned mesh and its armature as plain arrays: what the Blender layer
extracts and the audit judges.  Spaces are named on every field."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths import trees
from ..maths.affine import (
    affine_inverse,
    apply_affine,
    hierarchy_levels,
    largest_side,
    local_from_world,
    parent_first_order,
)
from ..maths.bbone import RigBBone, segment_index_and_blend
from ..maths.bone_runs import BoneRuns, gather_points
from ..maths.parallel import run_all
from .pose import Pose

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class HierarchyWalk:
    """How to walk a bone tree parent-first: computed once per armature, used by every test pose."""

    order: NDArray[np.intp]  # (J,) bone indices, parents first
    parents: tuple[int, ...]  # parent of each, as a position in ``order``
    levels: tuple[NDArray[np.intp], ...]  # positions in ``order`` by depth
    own_rotation: NDArray[np.bool_]  # (J,) in ``order``: Inherit Rotation off (not for roots)


@dataclass(frozen=True)
class Bones:
    """Every bone of an armature, in armature (object) space."""

    names: tuple[str, ...]
    parents: tuple[int, ...]  # -1 for a root
    use_deform: NDArray[np.bool_]  # (J,)
    rest: F64  # (J, 4, 4) bone.matrix_local
    bbone_segments: NDArray[np.int_]  # (J,)
    use_envelope_multiply: NDArray[np.bool_]  # (J,)
    heads: F64  # (J, 3) rest head
    tails: F64  # (J, 3) rest tail
    #: Per bone, per local axis (x, y, z): the rig's own rotation limits in radians
    #: (Limit Rotation constraints, IK limits), or None where there is none.
    limits: tuple[tuple[tuple[float, float] | None, ...], ...] = ()
    #: (J,) Bone.use_inherit_rotation; empty means every bone inherits.
    inherit_rotation: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: Per bone, its B-Bone record (rest data; None for a plain bone); empty means B-Bones were
    #: not read, and their vertices are then not reproduced.
    bbones: tuple[RigBBone | None, ...] = ()
    #: Per bone, the other bones whose pose its constraints or drivers read (the rig moves it
    #: from them: twist bones, Rigify's DEF bones); empty means no links were read.
    driven_by: tuple[tuple[str, ...], ...] = ()

    def index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}

    def followers(self, bone: int) -> tuple[str, ...]:
        """Deform bones the rig moves when ``bone`` moves: those whose constraints or drivers
        read it, directly or through helper bones.  Linear in bones and links."""
        if not self.driven_by:
            return ()
        readers: dict[str, list[int]] = {}
        for j, sources in enumerate(self.driven_by):
            for s in sources:
                readers.setdefault(s, []).append(j)
        seen = {bone}
        todo = [bone]
        while todo:
            for j in readers.get(self.names[todo.pop()], ()):
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return tuple(self.names[j] for j in sorted(seen - {bone}) if self.use_deform[j])

    @cached_property
    def local_rest(self) -> F64:
        """(J, 4, 4) each bone's rest matrix relative to its parent's (its own for a root)."""
        return local_from_world(self.rest, self.parents)

    @cached_property
    def walk(self) -> HierarchyWalk:
        """The bones in parent-first order, their parents in that order and its depth levels (cached)."""
        order = parent_first_order(self.parents)
        position = np.empty(len(self.parents), dtype=np.intp)
        position[order] = np.arange(len(order))
        parents = tuple(-1 if self.parents[j] < 0 else int(position[self.parents[j]]) for j in order)
        inherits = self.inherit_rotation if len(self.inherit_rotation) else np.ones(len(self.parents), dtype=bool)
        own = np.array([self.parents[j] >= 0 and not inherits[j] for j in order], dtype=bool)
        return HierarchyWalk(np.asarray(order, dtype=np.intp), parents, tuple(hierarchy_levels(parents)), own)

    @cached_property
    def depth_first(self) -> trees.DepthFirst:
        """The bones in depth-first order with each bone's subtree as one slice of it (cached)."""
        return trees.depth_first(self.parents)

    @cached_property
    def rest_inverse(self) -> F64:
        """(J, 4, 4) inverses of the rest matrices."""
        out: F64 = affine_inverse(self.rest)
        return out


@dataclass(frozen=True)
class ArmatureModifierSettings:
    """The settings of one Armature modifier that change the deformation."""

    name: str
    use_vertex_groups: bool = True
    use_bone_envelopes: bool = False
    preserve_volume: bool = False
    use_multi_modifier: bool = False
    mask_group: str = ""
    invert_mask: bool = False


@dataclass(frozen=True)
class FlatColumns:
    """Every (deform group, vertex) weight end to end: column ``c`` is ``starts[c]:starts[c + 1]``."""

    bones: NDArray[np.intp]  # (C,) bone of each column
    starts: NDArray[np.intp]  # (C + 1,)
    vertex: NDArray[np.intp]  # (N,)
    weight: F64  # (N,)
    contrib: F64  # (V,) sum of deform weights
    count: NDArray[np.intp]  # (V,) non-zero deform weights


@dataclass(frozen=True)
class BlendLayout:
    """The linear blend's layout of a mesh (``SkinnedMesh.blend_layout``)."""

    runs: BoneRuns  # run numbers: bones, then B-Bone joints from ``joints[bone]`` on
    scaled: F64  # (N,) each weight times Blender's ``a / sum w`` for its vertex
    gathered: F64  # (4, N) rest positions (object space) in run order, a row of ones last
    joints: dict[int, int]  # B-Bone -> the run number of its first joint


@dataclass(frozen=True)
class InfluenceTable:
    """Every vertex's non-zero deform weights, vertex-major, slots in group order (Blender's order)."""

    bones: NDArray[np.intp]  # (V, K) bone of each slot, 0 in unused slots
    weights: F64  # (V, K) weight of each slot, 0 in unused slots


@dataclass(frozen=True)
class SkinnedMesh:
    """One mesh object deformed by one Armature modifier.

    ``rest`` is the modifier's input (after shape keys and earlier modifiers),
    ``blender`` its output as Blender evaluated it at ``read_pose``; both in the mesh object's
    space.  ``weights`` holds every vertex group, row ``g`` for
    ``group_names[g]``, float32 as Blender stores them.

    The mesh holds rest data, what is derived from it (cached on it, once per mesh) and what
    Blender measured of it; a pose is passed to whatever deforms it (``core/audit/pose``).
    """

    object: str
    armature_object: str
    rest: F64  # (V, 3)
    group_names: tuple[str, ...]
    weights: NDArray[np.float32]  # (G, V)
    mesh_to_armature: F64  # (4, 4) premat = (A^-1 M)
    bones: Bones
    modifier: ArmatureModifierSettings
    #: The pose the armature was read at (``blender`` is Blender's output there).
    read_pose: Pose
    blender: F64 | None = None  # (V, 3)
    edges: NDArray[np.intp] = field(default_factory=lambda: np.zeros((0, 2), dtype=np.intp))
    #: (T, 3) vertex indices of the mesh's triangulation (Blender's loop triangles).
    triangles: NDArray[np.intp] = field(default_factory=lambda: np.zeros((0, 3), dtype=np.intp))
    #: The mesh as modelled (no shape keys, no modifiers), object space.
    modelled: F64 | None = None
    #: Positions Blender gives with the armature at its rest position (object space), if measured.
    blender_at_rest: F64 | None = None
    #: Channel matrices with every pose channel cleared (constraints, drivers active), if measured.
    cleared_channel: F64 | None = None
    #: Armature object's world scale, (3,), and whether its world matrix mirrors (det < 0).
    armature_scale: F64 = field(default_factory=lambda: np.ones(3))
    armature_mirrored: bool = False
    #: The armature object's own Scale property, as the user set it (for messages).
    armature_object_scale: F64 = field(default_factory=lambda: np.ones(3))
    #: Bones of the mesh's other Armature modifiers (a body rig beside a face rig):
    #: their groups are not "without bone", and their weights count toward a vertex's total.
    other_bones: frozenset[str] = frozenset()
    other_deform_bones: frozenset[str] = frozenset()
    parent: str = ""
    #: Shape keys with non-zero value and modifiers ahead of the Armature modifier, by name.
    shape_keys_active: tuple[str, ...] = ()
    #: The shape key Shape Key Lock shows alone at full strength (its value aside), or "".
    shape_key_pinned: str = ""
    #: Shape keys whose value a driver or an F-curve sets (corrective keys the rig drives), and
    #: (V,) the vertices any of them moves from its reference key (None: no such key).
    shape_keys_driven: tuple[str, ...] = ()
    driven_key_vertices: NDArray[np.bool_] | None = None
    modifiers_before: tuple[str, ...] = ()
    #: Features present that the numpy recomputation does not reproduce, with why.
    unsupported: tuple[str, ...] = ()
    #: The armature is shown at Rest Position: the pose Blender evaluates is its rest.
    shown_at_rest: bool = False
    #: Parented to its armature with parent type Armature: Blender deforms it a second time
    #: (a hidden Armature modifier at the top of the stack).
    parent_deforms: bool = False

    @property
    def vertex_count(self) -> int:
        return int(self.rest.shape[0])

    def size(self) -> float:
        """Largest bounding-box side of the rest mesh (at least 1e-6)."""
        return self._size

    @cached_property
    def _size(self) -> float:
        if self.vertex_count == 0:
            return 1.0
        side = largest_side(self.rest)
        return max(1.0 if side is None else side, tolerances.MIN_MESH_SIZE)

    def group_bones(self) -> NDArray[np.intp]:
        """(G,) bone index each group names, -1 for none."""
        index = self.bones.index()
        return np.array([index.get(n, -1) for n in self.group_names], dtype=np.intp)

    @cached_property
    def deform_columns(self) -> list[tuple[int, NDArray[np.intp], F64]]:
        """Per deform group with weights: (bone index, vertices with a non-zero weight, their weights).

        Views into ``flat_columns`` (one scan of every group row, once per mesh); the audit
        reads them many times.
        """
        flat = self.flat_columns
        edges = flat.starts.tolist()
        return [(int(bone), flat.vertex[edges[c]:edges[c + 1]], flat.weight[edges[c]:edges[c + 1]])
                for c, bone in enumerate(flat.bones.tolist())]

    @cached_property
    def armature_to_mesh(self) -> F64:
        """(4, 4) ``mesh_to_armature`` inverted, once per mesh (LAPACK's small solves are slow
        beside our threads: ``affine.affine_inverse``)."""
        out: F64 = affine_inverse(self.mesh_to_armature)
        return out

    @cached_property
    def rest_armature(self) -> F64:
        """(V, 3) rest positions in armature space (``mesh_to_armature`` applied)."""
        out: F64 = apply_affine(self.mesh_to_armature, self.rest)
        return out

    @cached_property
    def flat_columns(self) -> FlatColumns:
        """Every deform group's non-zero weights laid end to end, in group order (vertices
        ascending in a group): one scan of every group row, on the thread pool."""
        rows = [(g, int(bone)) for g, bone in enumerate(self.deform_groups()) if bone >= 0]
        found: list[tuple[NDArray[np.intp], F64]] = [(np.zeros(0, dtype=np.intp), np.zeros(0))] * len(rows)

        def scan(first: int, stop: int) -> None:
            for k in range(first, stop):
                row = self.weights[rows[k][0]]
                idx = np.flatnonzero(row != 0)  # a bool mask scans faster than float32 truth
                found[k] = (idx, row[idx].astype(np.float64))

        half = len(rows) // 2
        run_all([lambda: scan(0, half), lambda: scan(half, len(rows))])
        kept = [k for k in range(len(rows)) if found[k][0].size]
        starts = np.cumsum([0] + [found[k][0].size for k in kept]).astype(np.intp)
        vertex = np.concatenate([found[k][0] for k in kept]) if kept else np.zeros(0, dtype=np.intp)
        weight = np.concatenate([found[k][1] for k in kept]) if kept else np.zeros(0)
        v = self.vertex_count
        counts: list[NDArray[np.intp]] = []
        sums: list[F64] = []
        run_all([lambda: sums.append(np.bincount(vertex, weight, minlength=v).astype(np.float64)),
                 lambda: counts.append(np.bincount(vertex, minlength=v).astype(np.intp))])
        return FlatColumns(bones=np.array([rows[k][1] for k in kept], dtype=np.intp), starts=starts,
                           vertex=vertex, weight=weight, contrib=sums[0], count=counts[0])

    @cached_property
    def bbone_mapping(self) -> dict[int, tuple[NDArray[np.intp], F64]]:
        """Per deform B-Bone with weights: each weighted vertex's segment and blend, in the order
        of its ``deform_columns`` entry (rest data: computed once, kept across poses)."""
        out: dict[int, tuple[NDArray[np.intp], F64]] = {}
        bbones = self.bones.bbones
        if not bbones:
            return out
        for bone, idx, _ in self.deform_columns:
            rb = bbones[bone]
            if rb is not None:
                co_bone = apply_affine(self.bones.rest_inverse[bone], self.rest_armature[idx])
                out[bone] = segment_index_and_blend(co_bone, rb.spline.length, rb.rest_segments,
                                                    rb.spline.mapping_mode)
        return out

    @cached_property
    def mask(self) -> F64:
        """(V,) the Armature modifier's vertex-group mask ``a`` (1 where there is no mask)."""
        name = self.modifier.mask_group
        if not name or name not in self.group_names:
            return np.ones(self.vertex_count)
        m: F64 = self.weights[self.group_names.index(name)].astype(np.float64)
        return 1.0 - m if self.modifier.invert_mask else m

    @cached_property
    def blend_scale(self) -> F64:
        """(V,) what Blender multiplies a vertex's summed displacement by: ``a / sum w``, 0 where
        the sum is <= 1e-4 (the vertex does not move)."""
        s = self.flat_columns.contrib
        moved = s > tolerances.BLENDER_MIN_CONTRIB
        out: F64 = np.where(moved, self.mask / np.where(moved, s, 1.0), 0.0)
        return out

    @cached_property
    def blend_layout(self) -> BlendLayout:
        """The deform weights grouped by bone with ``blend_scale`` folded in, and the rest
        positions (object space) in that order, (3, N): the linear blend's layout, once per mesh.

        A B-Bone's weight ``w`` on a vertex between its joints ``i`` and ``i + 1`` (blend ``b``)
        becomes ``w (1 - b)`` on joint ``i`` and ``w b`` on joint ``i + 1`` (Blender blends the two
        joints' matrices so): each joint is a run of its own, numbered after the bones."""
        flat = self.flat_columns
        mapping = self.bbone_mapping
        if not mapping:
            runs = BoneRuns(flat.bones, flat.starts, flat.vertex, flat.weight, self.vertex_count)
            joints: dict[int, int] = {}
        else:
            runs, joints = self._runs_with_joints(flat, mapping)
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite weights stay for the audit to report
            scaled = runs.weight * self.blend_scale[runs.vertex]
        return BlendLayout(runs, scaled, gather_points(runs, self.rest), joints)

    def has_blend_layout(self) -> bool:
        """Whether ``blend_layout`` is built."""
        return "blend_layout" in self.__dict__

    def _runs_with_joints(self, flat: FlatColumns, mapping: dict[int, tuple[NDArray[np.intp], F64]]
                          ) -> tuple[BoneRuns, dict[int, int]]:
        """The runs of ``blend_layout`` when B-Bones have segments: plain bones' columns as they
        are, each B-Bone joint's weights as a run numbered from ``len(bones)`` (``joints``: the
        first number of each B-Bone)."""
        first = len(self.bones.names)
        joints: dict[int, int] = {}
        ids, verts, weights = [], [], []
        for c, bone in enumerate(flat.bones.tolist()):
            lo, hi = flat.starts[c], flat.starts[c + 1]
            idx, w = flat.vertex[lo:hi], flat.weight[lo:hi]
            if bone not in mapping:
                ids.append(np.full(hi - lo, bone, dtype=np.intp))
                verts.append(idx)
                weights.append(w)
                continue
            index, blend = mapping[bone]
            rb = self.bones.bbones[bone]
            assert rb is not None
            joints[bone] = first
            for joint, part in ((index, w * (1.0 - blend)), (index + 1, w * blend)):
                used = part != 0.0  # NaN is used: it reaches the vertex
                ids.append(first + joint[used])
                verts.append(idx[used])
                weights.append(part[used])
            first += len(rb.rest_segments)
        bone_of = np.concatenate(ids)
        vertex = np.concatenate(verts)
        # Grouped by run number, vertices ascending within a run (a stable sort of concatenated
        # ascending lists keeps them so only per source list: sort by (number, vertex)).
        # One int64 key: the columns come as ascending pieces, which a stable sort exploits
        # (3.5x faster than np.lexsort of the two keys on the character, the same order).
        order = np.argsort(bone_of.astype(np.int64) * max(self.vertex_count, 1) + vertex, kind="stable")
        bone_of, vertex = bone_of[order], vertex[order]
        cut = np.flatnonzero(np.diff(bone_of)) + 1
        starts = np.concatenate([[0], cut, [len(bone_of)]]).astype(np.intp)
        runs = BoneRuns(bone_of[starts[:-1]], starts, vertex, np.concatenate(weights)[order], self.vertex_count)
        return runs, joints

    @cached_property
    def influence_table(self) -> InfluenceTable:
        """The deform weights as a (V, K) table, K the most influences any vertex has."""
        flat = self.flat_columns
        v = self.vertex_count
        k = max(int(flat.count.max(initial=0)), 1)
        # Filled through flat indices (vertex * K + slot): a 2-D fancy assignment costs more.
        bones = np.zeros(v * k, dtype=np.intp)
        weights = np.zeros(v * k)
        fill = np.zeros(v, dtype=np.intp)
        for c, bone in enumerate(flat.bones.tolist()):
            idx = flat.vertex[flat.starts[c]:flat.starts[c + 1]]
            at = idx * k + fill[idx]
            bones[at] = bone
            weights[at] = flat.weight[flat.starts[c]:flat.starts[c + 1]]
            fill[idx] += 1
        bones, weights = bones.reshape(v, k), weights.reshape(v, k)
        return InfluenceTable(bones, weights)

    def vertex_subset(self, index: NDArray[np.intp]) -> SkinnedMesh:
        """The same rig on the vertices ``index`` only (their rest positions and weights): what a
        recomputation of those vertices needs.  Measurements of the whole mesh (Blender's output,
        edges, the modelled mesh) are left out."""
        # (np.take along the vertex axis: half the time of fancy indexing on a (G, V) array)
        return replace(self, rest=self.rest[index], weights=np.take(self.weights, index, axis=1), blender=None,
                       edges=np.zeros((0, 2), dtype=np.intp), triangles=np.zeros((0, 3), dtype=np.intp),
                       modelled=None, blender_at_rest=None)

    def deform_groups(self) -> NDArray[np.intp]:
        """(G,) bone index for groups naming a bone with Deform on, else -1 (Blender's pchan_from_defbase)."""
        bones = self.group_bones()
        deform = np.array([b >= 0 and bool(self.bones.use_deform[b]) for b in bones], dtype=bool)
        return np.where(deform, bones, -1)
