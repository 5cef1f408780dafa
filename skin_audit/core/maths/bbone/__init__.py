# SPDX-License-Identifier: GPL-3.0-or-later
"""B-Bone (bendy bone) deformation recomputed in numpy, the way Blender's
Armature modifier does it (Blender 4.2 - 5.0).

Sources followed (blender/blender):

- ``source/blender/blenkernel/intern/armature.cc``: ``BKE_pchan_bbone_spline_params_get``,
  ``BKE_pchan_bbone_handles_compute``, ``BKE_pchan_bbone_spline_compute`` (``for_deform``),
  ``equalize_cubic_bezier``, ``evaluate_cubic_bezier``, ``ease_handle_axis``,
  ``make_bbone_spline_matrix``, ``BKE_pchan_bbone_segments_cache_compute``,
  ``compute_bbone_segment_boundaries``, ``find_bbone_segment_index_straight`` /
  ``_curved``, ``BKE_pchan_bbone_deform_clamp_segment_index``, ``vec_roll_to_mat3_normalized``,
  ``mat3_vec_to_roll``.
- ``source/blender/blenkernel/intern/armature_deform.cc``: ``b_bone_deform`` and
  ``pchan_deform_accumulate`` (segment ``i`` with weight ``w (1 - blend)``, segment
  ``i + 1`` with ``w blend``; LBS adds ``w (M co - co)``, Preserve Volume adds the
  segment's dual quaternion pivoted at the vertex).
- ``source/blender/blenlib/intern/math_geom.cc``: ``cubic_tangent_factor_circle_v3``;
  ``math_rotation.cc``: ``mat4_to_dquat``, ``add_weighted_dq_dq_pivot``, ``mul_v3m3_dq``.

Conventions.  Matrices are (4, 4) column-vector affines (``p' = M @ p``), as
``bpy`` shows them.  "Bone space" is the bone's rest frame (``Bone.matrix_local``,
Blender's ``arm_mat``); "armature space" is the armature object's space.  A B-Bone
with ``S`` segments has ``S + 1`` spline matrices, one per joint between segments,
in bone space: these are what ``PoseBone.bbone_segment_matrix(i, rest=...)`` returns.
The deform matrix of joint ``a`` in armature space is
``channel @ arm @ pose_seg[a] @ inv(rest_seg[a]) @ inv(arm)`` with
``channel = pose_bone.matrix @ inv(bone.matrix_local)``.

The package, by what it models:

- ``spline``: a B-Bone's inputs (``BBoneSpline``, ``BBoneHandle``, ``BBoneShape``), its curve
  values no pose matrix changes (``curve_values``) and the curve's steps over rows of curves;
- ``mapping``: which segment(s) each vertex follows and its blend;
- ``deform``: the joints' deform matrices and dual quaternions at a pose, and their sum;
- ``batched``: the audit's records (``RigBBone``, rest data), what a pose adds to one
  (``BBonePose``), and their curves at many poses, many B-Bones at once: one vectorised pass per
  segment count, the only place the product computes a posed curve (scaled poses and handle
  scale included).  The one-B-Bone curve that follows Blender's functions call by call is kept in
  the tests (``tests/factories/bbone_reference.py``), as the reference the pass is compared with.

The functions work on arrays; ``BBoneSpline`` and ``BBoneHandle`` are frozen records of one
bone's inputs.  The only state is what a record and its spline remember of their own
curves (``batched``).
"""

from __future__ import annotations

from .batched import (
    AT_REST_SHAPE,
    BBonePose,
    RigBBone,
    SegmentsRequest,
    rig_pose_segments,
    rig_pose_segments_multi,
)
from .deform import (
    SegmentDualQuaternions,
    accumulate_bbone_dual,
    bbone_deform_matrices,
    bbone_deform_matrices_multi,
    segment_dual_quaternions,
)
from .mapping import (
    blended_segment_matrices,
    segment_index_and_blend,
    vertex_segments,
)
from .spline import (
    CURVED,
    HANDLE_TYPES,
    MAX_BBONE_SUBDIV,
    NO_POSE_SHAPE,
    STRAIGHT,
    BBoneHandle,
    BBoneShape,
    BBoneSpline,
    CurveValues,
    curve_values,
)

__all__ = [
    "AT_REST_SHAPE",
    "BBoneHandle",
    "BBonePose",
    "BBoneShape",
    "BBoneSpline",
    "CURVED",
    "CurveValues",
    "HANDLE_TYPES",
    "MAX_BBONE_SUBDIV",
    "NO_POSE_SHAPE",
    "RigBBone",
    "STRAIGHT",
    "SegmentDualQuaternions",
    "SegmentsRequest",
    "accumulate_bbone_dual",
    "bbone_deform_matrices",
    "bbone_deform_matrices_multi",
    "blended_segment_matrices",
    "curve_values",
    "rig_pose_segments",
    "rig_pose_segments_multi",
    "segment_dual_quaternions",
    "segment_index_and_blend",
    "vertex_segments",
]
