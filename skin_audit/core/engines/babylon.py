# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``babylon`` target: what Babylon.js (9.35.0) draws for a skinned glTF mesh.

Babylon has two skinning paths, and they differ:

* **GPU** (the default, ``mesh.computeBonesUsingShaders = true``): the vertex shader
  blends the bone matrices with the stored weights and never divides by their sum.
* **CPU** (``computeBonesUsingShaders = false``, and Babylon's own fallback when the
  skinning shader does not compile): ``Mesh.applySkeleton`` blends the matrices of the
  slots whose weight is > 0 and maps the point with a homogeneous divide, which divides
  by the weight sum.

Rules, each with the source it is read from (paths under ``node_modules/`` of the
pinned ``@babylonjs/core`` 9.35.0 and ``@babylonjs/loaders`` 9.28.0, the newest loaders on
npm; line numbers of the shipped ``.js``):

1. Influences: ``JOINTS_0``/``WEIGHTS_0`` and, when the primitive has ``JOINTS_1``,
   ``JOINTS_1``/``WEIGHTS_1``: 8 influences (``loaders/glTF/2.0/glTFLoader.pure.js``
   981-1000: ``numBoneInfluencers = 8`` on ``MatricesIndicesExtraKind``). Sets from
   ``JOINTS_2`` on are not read. Weights are used as stored: nothing in the loader or
   the mesh normalises them (``Mesh.cleanMatrixWeights``, ``core/Meshes/mesh.pure.js``
   2297, is never called by the loader). Normalised integer weights become c / 255 or
   c / 65535 (vertex buffer ``normalized`` flag, ``glTFLoader.pure.js`` 1785).
2. Joint matrices: the skinned node's own transform is ignored, as the glTF
   specification says (``glTFLoader.pure.js`` 770-773); positions here are in the
   glTF file's frame (Babylon's left-handed frame differs by the ``__root__`` node,
   ``glTFLoader.pure.js`` 563-570, a rotation and a mirror that keep lengths and the
   origin).
3. CPU (``core/Meshes/mesh.pure.js`` 3979-4069, ``Mesh.applySkeleton``; the same loop is
   ``ApplySkeleton`` in ``core/Meshes/abstractMesh.pure.js`` 63-91 (via ``_ApplySkeleton``, 1439) for
   ``getPositionData``): ``M = sum_{w_k > 0} w_k C_{j_k}`` (``if (weight > 0)``, lines
   4042 and 4050: zero, negative and NaN weights are skipped), then
   ``Vector3.TransformCoordinatesFromFloatsToRef`` (``core/Maths/math.vector.pure.js``
   2184-2195) returns ``(M p)_xyz / (M p)_w``; for affine ``C`` the last component is
   ``sum w_k``, so the CPU path divides by the weight sum. With no positive weight ``M``
   is zero and ``0 * (1 / 0)`` is NaN: the vertex vanishes. A joint index past
   ``skin.joints`` reads a zero matrix, the identity or ``undefined`` depending on how many
   extra bones the skeleton has (``core/Bones/skeleton.js`` 439-444); this model returns
   NaN for it (unknown), which is not verified by running Babylon.
4. GPU (``core/Shaders/ShadersInclude/bonesVertex.js`` 4-56, declarations in
   ``bonesDeclaration.js`` 4-8): ``influence = sum_k mBones[j_k] * w_k`` over all
   ``NUM_BONE_INFLUENCERS`` (4 or 8) slots, whatever the weight's sign;
   ``finalWorld = finalWorld * influence``; ``worldPos = finalWorld * vec4(p, 1)``
   (``core/Shaders/pbr.vertex.js`` 167, ``default.vertex.js`` 129);
   ``gl_Position = viewProjection * worldPos`` (``pbr.vertex.js`` 197,
   ``default.vertex.js`` 145). ``worldPos.w`` is the weight sum ``s``. Because clip
   coordinates are homogeneous, the rasteriser's divide by ``gl_Position.w`` cancels
   ``s`` when ``s > 0``: the vertex is **drawn** where the CPU path puts it. What does
   not cancel is everything that reads ``worldPos.xyz`` as a point: ``vPositionW``
   (lighting, view direction, reflections, fog; ``pbr.vertex.js`` 167) is ``s`` times
   the drawn world position. With ``s = 0`` the clip position is (0, 0, 0, 0) and the
   vertex has no screen position; with ``s < 0`` it is clipped away.
5. Morph targets (glTF shape keys): ``getPositionData(true, true)`` applies them, then
   the skeleton (``abstractMesh.pure.js`` 24-61 ``ApplyMorph``; ``_getData`` calls it at
   1475, then the skeleton at 1497);
   the GPU path does the same in the shader (``morphTargetsVertex`` before
   ``bonesVertex``, ``pbr.vertex.js`` 155 and 165). The CPU path's skinned vertex buffer
   has none of them (``applySkeleton`` reads ``_sourcePositions`` only), and the shader
   then adds ``(target - position) * influence`` to the already skinned ``position``
   (``ShadersInclude/morphTargetsVertex.js`` 8), pulling the vertex toward the
   unskinned target.

6. Animation (``loaders/glTF/2.0/glTFLoaderAnimation.pure.js`` 12-13, 87: rotations
   ``Quaternion.FromArray`` as stored; ``core/Animations/animation.pure.js`` 437-482:
   the key ``k`` with ``t_k <= t < t_k+1``, clamped outside; ``quaternionInterpolateFunction``
   303-304 is ``Quaternion.Slerp``, ``core/Maths/math.vector.pure.js`` 5098-5122: shorter
   arc, plain lerp when ``|d| > 0.999999``, **no normalisation** of keys or result;
   CUBICSPLINE is ``Quaternion.Hermite(...).normalize()``, 315-316). Node matrices come from
   ``Matrix.ComposeToRef`` (``math.vector.pure.js`` 6499-6521), which uses the quaternion
   as stored: a non-unit keyframe scales the bone (SimpleSkin's keys have length 0.99985).

The ``babylon`` entry of :data:`.targets.TARGETS` is rule 4's drawn position (8 slots as
stored, divided by their sum, NaN for a sum <= 0, the ``"babylon"`` animation rule); this
module adds the CPU path, the shading position and the findings.

Rules 1-3, 5's ``getPositionData`` and 6 are verified by running Babylon in the tests
(``tests/engines/test_babylon.py``); rule 4 and the shader half of rule 5 are read from
the shader source (no GPU runs in the tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from ..findings import Finding
from ..gltf.document import NORMALISATION_SCALE, GltfDocument
from ..gltf.morph import morph_weights
from ..gltf.skin import SkinnedPrimitive, joint_matrices, pose_at, skinned_primitives
from ..tolerances import BABYLON_SAME_POSITION_RELATIVE, BABYLON_WEIGHT_SUM_SLACK

TARGET = "babylon"
BABYLON_VERSION = "9.35.0"

#: Babylon reads two JOINTS/WEIGHTS sets at most (glTFLoader.pure.js 997-1000).
MAX_SETS = 2
SET_WIDTH = 4

# Finding codes of this target.
VANISHING_VERTICES = "babylon-vertex-vanishes"
UNNORMALISED_GPU_SHADING = "babylon-unnormalised-weights-shading"
CPU_GPU_DIFFER = "babylon-cpu-gpu-differ"
SHAPE_KEYS_IGNORED_ON_CPU = "babylon-shape-keys-ignored-on-cpu"
FINDING_CODES = (VANISHING_VERTICES, UNNORMALISED_GPU_SHADING, CPU_GPU_DIFFER, SHAPE_KEYS_IGNORED_ON_CPU)

# Tolerances (skin_audit/core/tolerances.py, "Babylon.js target" section).
WEIGHT_SUM_SLACK = BABYLON_WEIGHT_SUM_SLACK
SAME_POSITION_RELATIVE = BABYLON_SAME_POSITION_RELATIVE
#: Vertex indices listed per finding in the message (the finding keeps them all).
WORST_LISTED = 5


def _as_float(name: str, value: ArrayLike, shape_tail: tuple[int, ...]) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 1 + len(shape_tail) or arr.shape[1:] != shape_tail:
        want = ", ".join(["N", *map(str, shape_tail)])
        raise ShapeError(f"{name}: expected shape ({want}), got {arr.shape}")
    return arr


def babylon_influences(
    joints_sets: Sequence[ArrayLike], weights_sets: Sequence[ArrayLike]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The joint indices and weights Babylon reads, slot by slot.

    Parameters
    ----------
    joints_sets : sequence of (V, 4) int
        ``JOINTS_0``, ``JOINTS_1``... as stored.
    weights_sets : sequence of (V, 4) float64
        ``WEIGHTS_0``, ``WEIGHTS_1``... as floats (normalised integers already divided).

    Returns
    -------
    joints : (V, K) int64
    weights : (V, K) float64
        K = 8 when the primitive has a second set (``JOINTS_1`` and ``WEIGHTS_1``), else 4.
        Sets from the third on are dropped; no weight is changed.
    """
    if not joints_sets or not weights_sets:
        raise ShapeError("babylon: a skinned primitive needs JOINTS_0 and WEIGHTS_0")
    n_sets = min(len(joints_sets), len(weights_sets), MAX_SETS)
    joints = [np.asarray(joints_sets[i]) for i in range(n_sets)]
    weights = [_as_float(f"WEIGHTS_{i}", weights_sets[i], (SET_WIDTH,)) for i in range(n_sets)]
    for i, j in enumerate(joints):
        if j.ndim != 2 or j.shape[1] != SET_WIDTH or j.shape[0] != weights[0].shape[0]:
            raise ShapeError(f"JOINTS_{i}: expected shape ({weights[0].shape[0]}, 4), got {j.shape}")
        if weights[i].shape[0] != weights[0].shape[0]:
            raise ShapeError(f"WEIGHTS_{i}: expected {weights[0].shape[0]} rows, got {weights[i].shape[0]}")
    return np.concatenate(joints, axis=1).astype(np.int64), np.concatenate(weights, axis=1)


def _slot_matrices(
    joints: NDArray[np.int64], keep: NDArray[np.bool_], joint_matrices: NDArray[np.float64]
) -> NDArray[np.float64]:
    """(V, K, 4, 4) matrix of each slot: zero where ``keep`` is False, NaN past the skeleton."""
    n_joints = joint_matrices.shape[0]
    padded = np.concatenate([joint_matrices, np.zeros((1, 4, 4)), np.full((1, 4, 4), np.nan)])
    index = np.where((joints >= 0) & (joints < n_joints), joints, n_joints + 1)
    index = np.where(keep, index, n_joints)
    out: NDArray[np.float64] = padded[index]
    return out


def _homogeneous(
    rest: ArrayLike,
    joints_sets: Sequence[ArrayLike],
    weights_sets: Sequence[ArrayLike],
    joint_matrices: ArrayLike,
    *,
    positive_only: bool,
) -> NDArray[np.float64]:
    """(V, 4) blended matrix times the homogeneous rest point, before any divide."""
    points = _as_float("rest", rest, (3,))
    mats = _as_float("joint_matrices", joint_matrices, (4, 4))
    joints, weights = babylon_influences(joints_sets, weights_sets)
    if joints.shape[0] != points.shape[0]:
        raise ShapeError(f"rest has {points.shape[0]} vertices but the weights have {joints.shape[0]}")
    keep = weights > 0 if positive_only else np.ones(weights.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        used = np.where(keep, weights, 0.0)
        slot = _slot_matrices(joints, keep, mats)
        # (V, K) weights times (V, K, 4, 4) slot matrices, summed over slots: one matrix per vertex.
        blended = np.einsum("vk,vkij->vij", used, slot)
        # (V, 4, 4) @ (V, 4): each vertex's blended matrix on its homogeneous rest point.
        homogeneous_rest = np.concatenate([points, np.ones((len(points), 1))], axis=1)
        hom: NDArray[np.float64] = np.einsum("vij,vj->vi", blended, homogeneous_rest)
    return hom


def deform_cpu(
    rest: ArrayLike,
    joints_sets: Sequence[ArrayLike],
    weights_sets: Sequence[ArrayLike],
    joint_matrices: ArrayLike,
) -> NDArray[np.float64]:
    """Babylon's CPU skinning (``Mesh.applySkeleton``), in the glTF file's frame.

    Parameters
    ----------
    rest : (V, 3) float64
        ``POSITION`` (plus any morph targets already applied, for ``getPositionData``).
    joints_sets, weights_sets
        As for :func:`babylon_influences`.
    joint_matrices : (J, 4, 4) float64
        ``G_j @ IBM_j`` per skin joint, column vectors, in the scene's frame.

    Returns
    -------
    (V, 3) float64
        Positions; NaN for vertices Babylon makes NaN (no positive weight, or a positive
        weight on a joint past the skeleton). Never raises for those.
    """
    hom = _homogeneous(rest, joints_sets, weights_sets, joint_matrices, positive_only=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        # Babylon multiplies by 1 / w; 0 * inf is NaN as in JavaScript.
        out: NDArray[np.float64] = hom[:, :3] * (1.0 / hom[:, 3:4])
    return out


def gpu_world_positions(
    rest: ArrayLike,
    joints_sets: Sequence[ArrayLike],
    weights_sets: Sequence[ArrayLike],
    joint_matrices: ArrayLike,
) -> NDArray[np.float64]:
    """Babylon's shader ``worldPos`` as (x, y, z, w): blended over every slot, undivided.

    Returns
    -------
    (V, 4) float64
        ``w`` is the weight sum; ``xyz`` is what lighting and fog read as the vertex's
        world position (``vPositionW``).
    """
    return _homogeneous(rest, joints_sets, weights_sets, joint_matrices, positive_only=False)


def deform_gpu(
    rest: ArrayLike,
    joints_sets: Sequence[ArrayLike],
    weights_sets: Sequence[ArrayLike],
    joint_matrices: ArrayLike,
) -> NDArray[np.float64]:
    """Where Babylon's default (shader) skinning draws each vertex, in the glTF frame.

    Returns
    -------
    (V, 3) float64
        ``worldPos.xyz / worldPos.w`` (the rasteriser's divide), NaN where
        ``worldPos.w <= 0`` (no screen position, or clipped away).
    """
    hom = gpu_world_positions(rest, joints_sets, weights_sets, joint_matrices)
    w = hom[:, 3:4]
    with np.errstate(divide="ignore", invalid="ignore"):
        out: NDArray[np.float64] = np.where(w > 0, hom[:, :3] / w, np.nan)
    return out


def apply_morph(
    rest: ArrayLike, target_deltas: ArrayLike, target_weights: ArrayLike
) -> NDArray[np.float64]:
    """Morph targets as Babylon applies them (``ApplyMorph``): rest + sum_t w_t delta_t.

    Parameters
    ----------
    rest : (V, 3) float64
    target_deltas : (T, V, 3) float64
        Each target's ``POSITION`` displacement, as the glTF file stores it.
    target_weights : (T,) float64
        Influence of each target at the pose.

    Returns
    -------
    (V, 3) float64
    """
    points = _as_float("rest", rest, (3,))
    deltas = np.asarray(target_deltas, dtype=np.float64).reshape(-1, *points.shape)
    weights = np.asarray(target_weights, dtype=np.float64).reshape(-1)
    if deltas.shape[0] != weights.shape[0]:
        raise ShapeError(f"{deltas.shape[0]} morph targets but {weights.shape[0]} weights")
    # (T,) weights times (T, V, 3) displacements, summed over targets.
    out: NDArray[np.float64] = points + np.einsum("t,tvi->vi", weights, deltas)
    return out


def mesh_size(rest: ArrayLike) -> float:
    """Largest bounding-box side of the finite rest points (at least 1e-6)."""
    points = _as_float("rest", rest, (3,))
    finite = points[np.isfinite(points).all(axis=1)]
    if not len(finite):
        return 1.0
    return max(float(np.ptp(finite, axis=0).max()), 1e-6)


def _listed(vertices: NDArray[np.intp]) -> str:
    shown = ", ".join(str(int(v)) for v in vertices[:WORST_LISTED])
    return shown + (", ..." if len(vertices) > WORST_LISTED else "")


def babylon_findings(
    rest: ArrayLike,
    joints_sets: Sequence[ArrayLike],
    weights_sets: Sequence[ArrayLike],
    joint_matrices: ArrayLike,
    *,
    target_deltas: ArrayLike | None = None,
    target_weights: ArrayLike | None = None,
    where: str = "mesh",
    weight_quantum: float = 0.0,
) -> list[Finding]:
    """What a Babylon user will see that Blender does not show, as findings.

    Parameters
    ----------
    rest, joints_sets, weights_sets, joint_matrices
        As for :func:`deform_cpu`, at the pose being audited.
    target_deltas : (T, V, 3) float64, optional
    target_weights : (T,) float64, optional
        The primitive's morph targets and their influences at the pose.
    where : str
        Object name for the messages, also ``details["where"]`` (a primitive's ``label`` when
        the audit is to place the findings on a Blender mesh).
    weight_quantum : float
        Step of the stored weights (1/255, 1/65535; 0 for floats). Sums off by no more than
        half a step per slot are the storage's rounding: reported as INFO, not WARNING.

    Returns
    -------
    list of Finding
        Codes in ``FINDING_CODES``; every finding's ``details`` name the target.
    """
    points = _as_float("rest", rest, (3,))
    size = mesh_size(points)
    cpu = deform_cpu(points, joints_sets, weights_sets, joint_matrices)
    hom = gpu_world_positions(points, joints_sets, weights_sets, joint_matrices)
    gpu = deform_gpu(points, joints_sets, weights_sets, joint_matrices)
    _, weights = babylon_influences(joints_sets, weights_sets)
    n_slots = weights.shape[1]
    # ``where`` in the details too: the audit places a primitive's findings on the Blender mesh by it.
    base = {"target": TARGET, "engine_version": BABYLON_VERSION, "influences_read": n_slots, "where": where}
    findings: list[Finding] = []

    cpu_bad = ~np.isfinite(cpu).all(axis=1)
    gpu_bad = ~np.isfinite(gpu).all(axis=1)
    vanish = np.flatnonzero(cpu_bad | gpu_bad)
    if len(vanish):
        findings.append(Finding(
            code=VANISHING_VERTICES,
            severity="ERROR",
            message=(
                f"{where}: {len(vanish)} vertices have no usable weight among the {n_slots} Babylon reads "
                f"(vertices {_listed(vanish)}): Babylon's CPU skinning makes them NaN and its shader gives "
                "them no screen position, so they vanish with their triangles (Blender's importer and "
                "three.js pin such a vertex to its first joint). Give every vertex a positive weight on a "
                "joint of its skin."
            ),
            count=len(vanish),
            vertices=tuple(int(v) for v in vanish),
            details={**base, "cpu_nan": int(cpu_bad.sum()), "gpu_no_position": int(gpu_bad.sum())},
        ))

    ok = ~(cpu_bad | gpu_bad)
    sums = hom[:, 3]
    off_sum = np.flatnonzero(ok & (np.abs(sums - 1.0) > WEIGHT_SUM_SLACK))
    if len(off_sum):
        # The shader's world position is s times the drawn one: lighting reads a point this far off.
        shading_offset = np.linalg.norm(hom[off_sum, :3] - gpu[off_sum], axis=1)
        worst = int(off_sum[int(np.argmax(shading_offset))])
        rounding = float(np.abs(sums[off_sum] - 1.0).max()) <= 0.5 * weight_quantum * n_slots
        findings.append(Finding(
            code=UNNORMALISED_GPU_SHADING,
            severity="INFO" if rounding else "WARNING",
            message=(
                f"{where}: {len(off_sum)} vertices have weights that do not sum to 1 (sums "
                f"{float(sums[off_sum].min()):.4g} to {float(sums[off_sum].max()):.4g}; vertices "
                f"{_listed(off_sum)}). Babylon keeps them as stored: the vertex is drawn where Blender "
                "puts it (the homogeneous divide undoes the sum), but Babylon's shader lights, fogs and "
                "reflects it at its position times the sum, up to "
                f"{float(shading_offset.max()) / size:.3g} of the mesh size away at this pose. "
                + ("The sums are within the rounding of the stored integers; an exporter can pick "
                   "integers that sum exactly to the maximum." if rounding else
                   "Normalise the weights before export.")
            ),
            count=len(off_sum),
            vertices=tuple(int(v) for v in off_sum),
            details={**base, "worst_vertex": worst, "storage_rounding": rounding,
                     "worst_shading_offset_relative": float(shading_offset.max()) / size},
        ))

    apart = np.linalg.norm(cpu - gpu, axis=1)
    differ = np.flatnonzero(ok & (apart > SAME_POSITION_RELATIVE * size))
    if len(differ):
        findings.append(Finding(
            code=CPU_GPU_DIFFER,
            severity="WARNING",
            message=(
                f"{where}: {len(differ)} vertices (vertices {_listed(differ)}) deform differently on "
                "Babylon's CPU path (which skips weights that are not > 0) and on its shader (which uses "
                f"every slot), up to {float(apart[differ].max()) / size:.3g} of the mesh size apart. "
                "Remove negative weights."
            ),
            count=len(differ),
            vertices=tuple(int(v) for v in differ),
            details={**base, "worst_relative": float(apart[differ].max()) / size},
        ))

    if target_deltas is not None and target_weights is not None:
        morphed = apply_morph(points, target_deltas, target_weights)
        shift = np.linalg.norm(morphed - points, axis=1)
        moved = np.flatnonzero(shift > SAME_POSITION_RELATIVE * size)
        if len(moved):
            findings.append(Finding(
                code=SHAPE_KEYS_IGNORED_ON_CPU,
                severity="WARNING",
                message=(
                    f"{where}: {len(moved)} vertices are moved by morph targets (shape keys) at this pose, "
                    f"up to {float(shift.max()) / size:.3g} of the mesh size. Babylon's default shader "
                    "applies them before skinning, like Blender, but its CPU skinning path "
                    "(computeBonesUsingShaders = false, or Babylon's fallback when the skinning shader "
                    "does not compile) skins the vertices without them; the shader then blends toward "
                    "the unskinned target. Keep the GPU path for this mesh, or bake the shape keys."
                ),
                count=len(moved),
                vertices=tuple(int(v) for v in moved),
                details={**base, "worst_relative": float(shift.max()) / size},
            ))
    return findings


@dataclass(frozen=True)
class BabylonPrimitive:
    """One skinned primitive as Babylon deforms it at a pose (glTF frame)."""

    primitive: SkinnedPrimitive
    cpu: NDArray[np.float64]  # (V, 3) Mesh.applySkeleton: morph targets ignored
    position_data: NDArray[np.float64]  # (V, 3) getPositionData(true, true): morph then skeleton
    gpu: NDArray[np.float64]  # (V, 3) where the shader draws it (morph then skeleton)
    findings: tuple[Finding, ...]


def babylon_gltf_positions(
    doc: GltfDocument, clip: str | int | None = None, time: float | None = None
) -> list[BabylonPrimitive]:
    """Every skinned primitive of a glTF file as Babylon deforms it at ``time`` seconds.

    Parameters
    ----------
    doc : GltfDocument
    clip : str, int or None
        Animation name or index (first when None).
    time : float or None
        Seconds; None is the rest pose.

    Returns
    -------
    list of BabylonPrimitive
        NaN positions are returned for vertices Babylon loses, and reported in ``findings``.
    """
    pose = pose_at(doc, clip, time, "babylon", "as_stored")
    out = []
    for prim in skinned_primitives(doc):
        mats = joint_matrices(doc, prim.skin, pose.world)
        joints = [s.joints for s in prim.sets]
        weights = [s.weights for s in prim.sets]
        # Babylon's loader takes the same influences (_createMorphTargets) and lerps a weights channel.
        deltas = np.asarray(prim.morph_positions, dtype=np.float64).reshape(-1, *prim.positions.shape)
        influences = morph_weights(doc, prim, pose.animation, time)
        morphed = apply_morph(prim.positions, deltas, influences) if len(deltas) else prim.positions
        where = prim.label
        out.append(BabylonPrimitive(
            primitive=prim,
            cpu=deform_cpu(prim.positions, joints, weights, mats),
            position_data=deform_cpu(morphed, joints, weights, mats),
            gpu=deform_gpu(morphed, joints, weights, mats),
            findings=tuple(babylon_findings(
                prim.positions, joints, weights, mats,
                target_deltas=deltas if len(deltas) else None,
                target_weights=influences if len(deltas) else None, where=where,
                weight_quantum=1.0 / NORMALISATION_SCALE.get(prim.sets[0].weight_component_type, np.inf),
            )),
        ))
    return out
