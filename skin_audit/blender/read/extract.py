# SPDX-License-Identifier: GPL-3.0-or-later
"""Extract a skinned mesh (one Armature modifier) into core.rig_data arrays.

Reads evaluated data only; anything that needs a different pose or a trimmed
modifier stack is evaluated on sandbox copies, never on the user's objects.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ...core.audit.pose import Pose
from ...core.audit.skinned_mesh import ArmatureModifierSettings, Bones, SkinnedMesh
from ...core.maths.affine import affine_inverse
from ..actions import action_fcurves
from ..sandbox import Sandbox, sandbox
from .arrays import bone_hierarchy, flags, matrices, matrix, mesh_positions, mesh_triangles, pose_matrices
from .bbones import read_bbones
from .rig_links import bone_links
from .sanity import require_auditable
from .weights import group_weights

_AXES = ("x", "y", "z")


def _rotation_limits(pb: bpy.types.PoseBone) -> tuple[tuple[float, float] | None, ...]:
    """The bone's own rotation limits per local axis: Limit Rotation (local space) and IK limits."""
    limits: list[tuple[float, float] | None] = [None, None, None]
    for con in pb.constraints:
        if con.type == "LIMIT_ROTATION" and not con.mute and con.owner_space == "LOCAL":
            for a, axis in enumerate(_AXES):
                if getattr(con, f"use_limit_{axis}"):
                    limits[a] = (getattr(con, f"min_{axis}"), getattr(con, f"max_{axis}"))
    for a, axis in enumerate(_AXES):
        if limits[a] is None and getattr(pb, f"use_ik_limit_{axis}"):
            limits[a] = (getattr(pb, f"ik_min_{axis}"), getattr(pb, f"ik_max_{axis}"))
    return tuple(limits)


def read_bones(arm_eval: bpy.types.Object) -> tuple[Bones, Pose]:
    """The armature's bones (rest data) and the pose they are at."""
    bones = arm_eval.data.bones
    names, parents = bone_hierarchy(bones)
    n = len(bones)
    segments = np.zeros(n, dtype=np.int32)
    bones.foreach_get("bbone_segments", segments)
    use_deform = flags(bones, "use_deform")
    channel = pose_matrices(arm_eval, names, "matrix_channel")
    heads = np.zeros(n * 3, dtype=np.float32)
    tails = np.zeros(n * 3, dtype=np.float32)
    bones.foreach_get("head_local", heads)
    bones.foreach_get("tail_local", tails)
    records, at_pose = read_bbones(arm_eval, names, channel, use_deform)
    return Bones(
        names=names,
        parents=parents,
        use_deform=use_deform,
        rest=matrices(bones, "matrix_local"),
        bbone_segments=segments.astype(np.int_),
        bbones=records,
        use_envelope_multiply=flags(bones, "use_envelope_multiply"),
        heads=heads.reshape(-1, 3).astype(np.float64),
        tails=tails.reshape(-1, 3).astype(np.float64),
        limits=tuple(_rotation_limits(arm_eval.pose.bones[n]) for n in names),
        inherit_rotation=flags(bones, "use_inherit_rotation"),
        driven_by=bone_links(arm_eval, names),
    ), Pose(channel, at_pose)


def _settings(mod: bpy.types.ArmatureModifier) -> ArmatureModifierSettings:
    return ArmatureModifierSettings(
        name=mod.name,
        use_vertex_groups=mod.use_vertex_groups,
        use_bone_envelopes=mod.use_bone_envelopes,
        preserve_volume=mod.use_deform_preserve_volume,
        use_multi_modifier=mod.use_multi_modifier,
        mask_group=mod.vertex_group,
        invert_mask=mod.invert_vertex_group,
    )


def clear_pose(arm: bpy.types.Object) -> None:
    """Clear every pose channel of a (sandbox) armature; constraints and drivers stay."""
    if arm.animation_data is not None:
        arm.animation_data.action = None
        arm.animation_data.use_nla = False  # pushed-down actions would pose it too
    set_rest_channels(arm)


#: Every pose channel and its rest value, per component: transforms, then the B-Bone pose
#: properties (a curve, roll, ease or scale set in Pose Mode moves vertices too).
REST_CHANNELS = (
    ("location", (0.0, 0.0, 0.0)), ("rotation_quaternion", (1.0, 0.0, 0.0, 0.0)),
    ("rotation_euler", (0.0, 0.0, 0.0)), ("rotation_axis_angle", (0.0, 0.0, 1.0, 0.0)),
    ("scale", (1.0, 1.0, 1.0)),
    ("bbone_curveinx", (0.0,)), ("bbone_curveinz", (0.0,)), ("bbone_curveoutx", (0.0,)),
    ("bbone_curveoutz", (0.0,)), ("bbone_rollin", (0.0,)), ("bbone_rollout", (0.0,)),
    ("bbone_easein", (0.0,)), ("bbone_easeout", (0.0,)),
    ("bbone_scalein", (1.0, 1.0, 1.0)), ("bbone_scaleout", (1.0, 1.0, 1.0)),
)


def set_rest_channels(arm: bpy.types.Object) -> None:
    """Every pose channel of a (sandbox) armature to its rest value: one ``foreach_set`` per property."""
    pose_bones = arm.pose.bones
    n = len(pose_bones)
    for prop, value in REST_CHANNELS:
        if n and hasattr(pose_bones[0], prop):
            pose_bones.foreach_set(prop, np.tile(np.asarray(value, dtype=np.float32), n))
    # foreach_set skips RNA update callbacks: tell the depsgraph the pose changed.
    arm.update_tag()


def trim_after(obj: bpy.types.Object, keep_through: int, armature: bpy.types.Object | None) -> None:
    """Drop modifiers after index ``keep_through`` from a sandbox copy; retarget armatures."""
    for mod in list(obj.modifiers)[keep_through + 1:]:
        obj.modifiers.remove(mod)
    if armature is not None:
        for mod in obj.modifiers:
            if mod.type == "ARMATURE":
                mod.object = armature


def pinned_shape_key(obj: bpy.types.Object) -> str:
    """The shape key Shape Key Lock shows alone at full strength (whatever its value), or ""."""
    keys = obj.data.shape_keys
    if keys is not None and obj.show_only_shape_key and obj.active_shape_key_index > 0:
        return str(keys.key_blocks[obj.active_shape_key_index].name)
    return ""


def parent_deforms(obj: bpy.types.Object, arm: bpy.types.Object) -> bool:
    """``obj`` is parented to ``arm`` with parent type Armature: Blender runs a hidden Armature
    modifier on ``arm`` at the top of its stack."""
    return obj.parent == arm and obj.parent_type == "ARMATURE"


#: The name the audit gives Blender's hidden Armature modifier of parent type Armature.
PARENT_MODIFIER_NAME = "parent type Armature"


@dataclass(frozen=True)
class ParentModifier:
    """Blender's hidden Armature modifier of a mesh parented to its armature with parent type
    Armature (``BKE_modifiers_get_virtual_modifierlist``), read like an ``ArmatureModifier``.

    It runs after the shape keys and before every modifier of the stack, with the armature data's
    deform flags: vertex groups and envelopes (``ARM_DEF_VGROUP | ARM_DEF_ENVELOPE``, the default
    of every armature, not exposed to Python; measured: a vertex without a deform group moves by
    the envelopes), no mask, no Preserve Volume, no Multi Modifier.
    """

    object: Any  # the parent armature (bpy.types.Object)
    name: str = PARENT_MODIFIER_NAME
    type: str = "ARMATURE"
    show_viewport: bool = True
    use_vertex_groups: bool = True
    use_bone_envelopes: bool = True
    use_deform_preserve_volume: bool = False
    use_multi_modifier: bool = False
    vertex_group: str = ""
    invert_vertex_group: bool = False


def modifier_position(obj: bpy.types.Object, mod: Any) -> int:
    """Index of ``mod`` in ``obj``'s stack; -1 for the hidden modifier of parent type Armature
    (it runs before the whole stack)."""
    if isinstance(mod, ParentModifier):
        return -1
    return list(obj.modifiers).index(mod)


def modifier_input_copy(copy: bpy.types.Object, position: int) -> None:
    """Make a sandbox copy evaluate the input of the modifier at ``position``: the stack before it
    only (for parent type Armature, -1: no modifier, and the parenting made Object, which keeps the
    world matrix and drops the deformation)."""
    if position < 0:
        trim_after(copy, -1, None)
        if copy.parent is not None and copy.parent_type == "ARMATURE":
            copy.parent_type = "OBJECT"
        return
    trim_after(copy, position - 1, None)


def follow_copy(copy: bpy.types.Object, obj: bpy.types.Object, arm: bpy.types.Object,
                arm_copy: bpy.types.Object) -> None:
    """A sandbox copy of ``obj`` that ``arm_copy`` (a copy of ``arm``, the same object transform)
    deforms: its parenting's hidden Armature modifier follows the copy too, as its modifier does."""
    if parent_deforms(obj, arm):
        copy.parent = arm_copy  # (the parent inverse is kept: the same world matrix)


def active_shape_keys(obj: bpy.types.Object) -> tuple[str, ...]:
    """Shape keys that change the mesh: non-zero and unmuted, or pinned (full strength whatever its value)."""
    keys = obj.data.shape_keys
    active = tuple(
        kb.name for kb in (keys.key_blocks[1:] if keys is not None else []) if abs(kb.value) > 0.0 and not kb.mute
    )
    pinned = pinned_shape_key(obj)
    if pinned:
        active = tuple(dict.fromkeys((*active, pinned)))
    return active


def driven_shape_keys(obj: bpy.types.Object) -> tuple[tuple[str, ...], np.ndarray | None]:
    """Unmuted shape keys whose value a driver or an F-curve sets, and (V,) bool the vertices any
    of them moves from its reference key (None when there is none)."""
    keys = obj.data.shape_keys
    if keys is None or keys.animation_data is None:
        return (), None
    anim = keys.animation_data
    paths = {d.data_path for d in anim.drivers}
    if anim.action is not None:
        paths |= {c.data_path for c in action_fcurves(anim.action)}
    names = tuple(kb.name for kb in keys.key_blocks[1:]
                  if not kb.mute and f'key_blocks["{kb.name}"].value' in paths)
    if not names:
        return (), None
    count = len(obj.data.vertices)
    moved = np.zeros(count, dtype=bool)
    co = np.empty(count * 3, dtype=np.float32)
    ref = np.empty(count * 3, dtype=np.float32)
    for name in names:
        kb = keys.key_blocks[name]
        kb.data.foreach_get("co", co)
        (kb.relative_key or keys.reference_key).data.foreach_get("co", ref)
        moved |= (co != ref).reshape(count, 3).any(axis=1)
    return names, moved


@dataclass
class _Evaluated:
    """What sandbox copies measured; ``None`` where the user's own evaluation serves."""

    rest: np.ndarray | None = None  # the modifier's input, when something comes before it
    blender: np.ndarray | None = None  # the modifier's output, when something comes after it or it is hidden
    rig: tuple[Bones, Pose] | None = None  # the bones and their pose, when the rig is hidden from the view layer
    at_rest: np.ndarray | None = None  # the mesh with the armature at Rest Position
    cleared: np.ndarray | None = None  # channel matrices with every pose channel cleared


def _evaluate_on_copies(obj: bpy.types.Object, mod: bpy.types.ArmatureModifier, needs_input: bool,
                        has_after: bool, hidden: bool, measure_drift: bool,
                        scratch: np.ndarray | None = None, box: Sandbox | None = None) -> _Evaluated:
    """Everything that needs another pose or a trimmed stack, evaluated on copies in a sandbox.

    ``scratch`` is a float32 buffer the positions are read through (see ``mesh_positions``).
    ``box``: a sandbox the caller keeps open (its other copies are evaluated with these), else
    one of its own.
    """
    with ExitStack() as stack:
        return _evaluate_in(box if box is not None else stack.enter_context(sandbox()), obj, mod, needs_input,
                            has_after, hidden, measure_drift, scratch)


def _evaluate_in(box: Sandbox, obj: bpy.types.Object, mod: bpy.types.ArmatureModifier, needs_input: bool,
                 has_after: bool, hidden: bool, measure_drift: bool, scratch: np.ndarray | None) -> _Evaluated:
    """``_evaluate_on_copies`` in ``box``."""
    arm = mod.object
    position = modifier_position(obj, mod)
    found = _Evaluated()
    if hidden:
        # A rig the view layer does not evaluate (hidden, excluded collection): visible copies.
        arm_shown = box.copy_object(arm)
        shown = box.copy_object(obj)
        trim_after(shown, position, arm_shown)
        follow_copy(shown, obj, arm, arm_shown)
    if needs_input:
        # The modifier's input: the stack evaluated up to (not including) it.
        copy = box.copy_object(obj)
        modifier_input_copy(copy, position)
    if has_after and not hidden:
        out_copy = box.copy_object(obj)
        trim_after(out_copy, position, None)
    # At Rest Position Blender skips constraints and IK, and a rig the view layer evaluates holds
    # the pose values its depsgraph last wrote (its animation and drivers at this frame, or what
    # the user set without a key): a copy without animation shows the rest the user would see, so
    # the spot checks' copies (constraints muted, animation cleared) serve.  A rig the view layer
    # does not evaluate may hold stale values: its copy plays its animation.
    view = box.rest_views.get((obj.name, mod.name)) if measure_drift and not hidden else None
    if measure_drift:
        if view is not None:
            arm_rest, rest_copy = view
        else:
            arm_rest = box.copy_object(arm, copy_data=True)
            if not hidden:
                arm_rest.animation_data_clear()
            rest_copy = box.copy_object(obj)
            trim_after(rest_copy, position, arm_rest)
            follow_copy(rest_copy, obj, arm, arm_rest)
        arm_rest.data.pose_position = "REST"
        # Constraints and drivers hold bones at Pose Position only: the cleared pose is evaluated
        # there even when the user shows the rig at Rest Position (a copy of its data switched).
        shown_at_rest = arm.data.pose_position != "POSE"
        arm_cleared = box.copy_object(arm, copy_data=shown_at_rest)
        if shown_at_rest:
            arm_cleared.data.pose_position = "POSE"
        clear_pose(arm_cleared)
    if not box.has_copies:
        return found
    dg = box.depsgraph()
    if needs_input:
        found.rest = mesh_positions(copy.evaluated_get(dg).data, scratch)
    if hidden:
        found.blender = mesh_positions(shown.evaluated_get(dg).data, scratch)
        found.rig = read_bones(arm_shown.evaluated_get(dg))
    elif has_after:
        found.blender = mesh_positions(out_copy.evaluated_get(dg).data, scratch)
    if measure_drift:
        found.at_rest = mesh_positions(rest_copy.evaluated_get(dg).data, scratch)
        if view is not None:
            arm_rest.data.pose_position = "POSE"  # the spot checks pose it next
        names = tuple(b.name for b in arm.data.bones)
        found.cleared = pose_matrices(arm_cleared.evaluated_get(dg), names, "matrix_channel")
    return found


def _not_reproduced(mod: bpy.types.ArmatureModifier, bones: Bones) -> list[str]:
    """Features of this modifier and rig the recomputation does not reproduce, with why."""
    out = []
    if mod.use_multi_modifier:
        out.append(f"'{mod.name}' uses Multi Modifier; blending with the previous modifier is not reproduced")
    # B-Bones are recomputed from their segments; only bones whose segments were not read are left out.
    read = np.array([b is not None for b in bones.bbones] or [False] * len(bones.names), dtype=bool)
    bbones = [bones.names[j] for j in np.flatnonzero((bones.bbone_segments > 1) & bones.use_deform & ~read)]
    if bbones:
        out.append(f"B-Bone segments on {len(bbones)} deform bones ({', '.join(bbones[:5])}): "
                   "their vertices are not compared")
    if mod.use_bone_envelopes:
        out.append(f"'{mod.name}' uses Bone Envelopes: vertices without deform weights are not compared")
    if bones.use_envelope_multiply[bones.use_deform].any():
        out.append("bones with Multiply Vertex Group by Envelope: their vertices are not compared")
    return out


def mesh_edges(mesh: bpy.types.Mesh) -> np.ndarray:
    """(E, 2) vertex indices of every edge."""
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    if ".edge_verts" in mesh.attributes:  # ~50x faster than edges' "vertices"
        mesh.attributes[".edge_verts"].data.foreach_get("value", edges)
    else:
        mesh.edges.foreach_get("vertices", edges)
    return edges.reshape(-1, 2).astype(np.intp)


def extract(
    obj: bpy.types.Object, mod: bpy.types.ArmatureModifier, depsgraph: bpy.types.Depsgraph,
    measure_drift: bool = True, box: Sandbox | None = None,
) -> SkinnedMesh:
    """Everything the audit needs about ``obj`` deformed by ``mod``; ``box``: a sandbox the
    caller keeps open for its copies (see ``_evaluate_on_copies``)."""
    require_auditable(obj, mod)
    arm = mod.object
    mods = list(obj.modifiers)
    others = {m.object for m in mods if m.type == "ARMATURE" and m is not mod and m.object is not None
              and m.object.type == "ARMATURE" and m.object != arm}
    position = modifier_position(obj, mod)
    before = tuple(m.name for m in mods[:max(position, 0)] if m.show_viewport)
    after = [m for m in mods[position + 1:] if m.show_viewport]
    obj_eval = obj.evaluated_get(depsgraph)
    arm_eval = arm.evaluated_get(depsgraph)
    active_keys = active_shape_keys(obj)
    driven_keys, driven_vertices = driven_shape_keys(obj)
    hidden = not (obj_eval.is_evaluated and arm_eval.is_evaluated)
    # One float32 buffer for every positions read: each is widened to float64 once, from it.
    scratch = np.empty(len(obj.data.vertices) * 3, dtype=np.float32)
    found = _evaluate_on_copies(obj, mod, bool(before or active_keys), bool(after), hidden, measure_drift,
                                scratch, box)

    base = mesh_positions(obj.data, scratch)
    rest = base if found.rest is None else found.rest
    blender_out = mesh_positions(obj_eval.data, scratch) if found.blender is None else found.blender
    bones, read_pose = read_bones(arm_eval) if found.rig is None else found.rig
    unsupported = _not_reproduced(mod, bones)
    if len(rest) != len(base) or len(blender_out) != len(base):
        unsupported.insert(0, f"modifiers around '{mod.name}' change the vertex count ({len(base)} -> "
                              f"{len(blender_out)}); the recomputation needs the Armature modifier's own input")
        rest, blender_out = base, None
    arm_world = matrix(arm_eval.matrix_world)
    return SkinnedMesh(
        object=obj.name,
        armature_object=arm.name,
        rest=rest,
        group_names=tuple(g.name for g in obj.vertex_groups),
        weights=group_weights(obj),
        mesh_to_armature=affine_inverse(arm_world) @ matrix(obj_eval.matrix_world),  # (no LAPACK: affine_inverse)
        bones=bones,
        modifier=_settings(mod),
        read_pose=read_pose,
        blender=blender_out,
        edges=mesh_edges(obj.data),
        triangles=mesh_triangles(obj.data),
        modelled=base,
        blender_at_rest=found.at_rest,
        cleared_channel=found.cleared,
        armature_scale=np.linalg.norm(arm_world[:3, :3], axis=0),
        armature_object_scale=np.array(arm.scale, dtype=np.float64),
        armature_mirrored=bool(np.linalg.det(arm_world[:3, :3]) < 0),
        other_bones=frozenset(b.name for a in others for b in a.data.bones),
        other_deform_bones=frozenset(b.name for a in others for b in a.data.bones if b.use_deform),
        parent=obj.parent.name if obj.parent else "",
        shape_keys_active=active_keys,
        shape_key_pinned=pinned_shape_key(obj),
        shape_keys_driven=driven_keys,
        driven_key_vertices=driven_vertices,
        modifiers_before=before,
        unsupported=tuple(unsupported),
        shown_at_rest=arm.data.pose_position != "POSE",
        # (the hidden modifier of parent type Armature audited as the modifier deforms once)
        parent_deforms=parent_deforms(obj, arm) and not isinstance(mod, ParentModifier),
    )
