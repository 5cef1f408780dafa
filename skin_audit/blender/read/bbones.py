# SPDX-License-Identifier: GPL-3.0-or-later
"""Read an armature's deforming B-Bones into ``core.maths.bbone`` records.

Blender's joint matrices at the current pose come from ``PoseBone.bbone_segment_matrix``;
the inputs of the curve (properties, handle bones) are read too, so poses made in numpy
(the sweep, stress poses) can recompute the curve from the handles.
"""

from __future__ import annotations

import bpy
import numpy as np

from ...core.maths import bbone as bb
from .arrays import F64, matrix


def _shape(item: bpy.types.Bone | bpy.types.PoseBone) -> bb.BBoneShape:
    return bb.BBoneShape(
        ease_in=item.bbone_easein, ease_out=item.bbone_easeout, roll_in=item.bbone_rollin,
        roll_out=item.bbone_rollout, curve_in_x=item.bbone_curveinx, curve_in_z=item.bbone_curveinz,
        curve_out_x=item.bbone_curveoutx, curve_out_z=item.bbone_curveoutz,
        scale_in=tuple(item.bbone_scalein), scale_out=tuple(item.bbone_scaleout))


def _handle(arm_eval: bpy.types.Object, pb: bpy.types.PoseBone | None) -> bb.BBoneHandle | None:
    if pb is None:
        return None
    # Blender's BKE_armature_mat_pose_to_bone: the handle's pose in its own local space.
    local = matrix(arm_eval.convert_space(pose_bone=pb, matrix=pb.matrix, from_space="POSE", to_space="LOCAL"))
    return bb.BBoneHandle(
        rest=matrix(pb.bone.matrix_local), pose=matrix(pb.matrix), length=pb.bone.length,
        segments=pb.bone.bbone_segments, local_scale=tuple(np.linalg.norm(local[:3, :3], axis=0)),
        roll_out_rest=pb.bone.bbone_rollout, roll_out_pose=pb.bbone_rollout)


def _handles(arm_eval: bpy.types.Object, pb: bpy.types.PoseBone
             ) -> tuple[bpy.types.PoseBone | None, bpy.types.PoseBone | None]:
    """Blender's BKE_pchan_bbone_handles_get: AUTO is the connected parent / last connected child."""
    bone = pb.bone
    pose_bones = arm_eval.pose.bones
    if bone.bbone_handle_type_start == "AUTO":
        prev = pb.parent if bone.use_connect else None
    else:
        custom = bone.bbone_custom_handle_start
        prev = pose_bones[custom.name] if custom else None
    if bone.bbone_handle_type_end == "AUTO":
        connected = [c for c in pb.children if c.bone.use_connect]
        nxt = connected[-1] if connected else None
    else:
        custom = bone.bbone_custom_handle_end
        nxt = pose_bones[custom.name] if custom else None
    return prev, nxt


def read_bbones(arm_eval: bpy.types.Object, names: tuple[str, ...], channel: F64, use_deform: np.ndarray
                ) -> tuple[tuple[bb.RigBBone | None, ...], tuple[bb.BBonePose | None, ...]]:
    """Per bone (in ``names`` order), its B-Bone record (rest data) and what the current pose adds to
    it (pose properties, Blender's posed joints), or None for a plain or non-deform bone.

    ``channel`` (J, 4, 4) are the channel matrices the audit deforms with (kept with the posed
    joints, so that pose is recognised later).
    """
    index = {n: i for i, n in enumerate(names)}
    out: list[bb.RigBBone | None] = []
    at_pose: list[bb.BBonePose | None] = []
    for j, name in enumerate(names):
        pb = arm_eval.pose.bones[name]
        bone = pb.bone
        segments = bone.bbone_segments
        if segments <= 1 or not use_deform[j]:
            out.append(None)
            at_pose.append(None)
            continue
        prev, nxt = _handles(arm_eval, pb)
        spline = bb.BBoneSpline(
            rest=matrix(bone.matrix_local), length=bone.length, segments=segments, shape=_shape(bone),
            handle_type_start=bone.bbone_handle_type_start, handle_type_end=bone.bbone_handle_type_end,
            prev=_handle(arm_eval, prev), next=_handle(arm_eval, nxt),
            use_scale_start=tuple(bone.bbone_handle_use_scale_start),
            use_scale_end=tuple(bone.bbone_handle_use_scale_end),
            use_ease_start=bone.bbone_handle_use_ease_start, use_ease_end=bone.bbone_handle_use_ease_end,
            use_endroll_as_inroll=bone.use_endroll_as_inroll, use_scale_easing=bone.use_scale_easing,
            mapping_mode=bone.bbone_mapping_mode)
        prev_j = index[prev.name] if prev is not None else -1
        next_j = index[nxt.name] if nxt is not None else -1
        chans = np.stack([channel[k] if k >= 0 else np.eye(4) for k in (j, prev_j, next_j)])
        out.append(bb.RigBBone(
            spline=spline, prev_bone=prev_j, next_bone=next_j,
            rest_segments=np.array([matrix(pb.bbone_segment_matrix(i, rest=True)) for i in range(segments + 1)])))
        at_pose.append(bb.BBonePose(
            shape=_shape(pb),
            joints=np.array([matrix(pb.bbone_segment_matrix(i, rest=False)) for i in range(segments + 1)]),
            read_at=chans))
    return tuple(out), tuple(at_pose)
