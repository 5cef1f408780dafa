# SPDX-License-Identifier: GPL-3.0-or-later
"""Apply an armature object's scale to its rest pose, keeping every skinned result in place.

The fix of ``non-uniform-armature-scale`` and ``negative-armature-scale`` (docs/fixes.md).
With ``S`` the object's scale (``scale * delta_scale``, a diagonal in armature space) and
``A`` its world matrix, the object becomes ``A' = A S^-1`` (scale 1) and everything in
armature space is mapped by ``S``, so that ``A' (S x) = A x``:

1. Rest bones: heads and tails times ``S``; the roll turns the bone's Z axis to ``S z`` (for
   a mirror exactly the mirrored Z: the bone's X axis flips, and the frame stays a proper
   rotation); envelope radii, envelope distance and B-Bone display sizes times Blender's
   scale of ``S`` (``mat3_to_scale``, as Apply Scale does).
2. Pose channels live in each bone's rest frame ``B``; the new frame is ``B'``, and
   ``D = B'^T S B`` maps one to the other.  For a uniform scale, with or without a mirror,
   ``D`` is ``s * diag(+-1, 1, 1)``: locations become ``D loc``, rotations are conjugated by
   its signs (a quaternion's vector part and Euler angles change sign per axis), B-Bone curve
   offsets scale by ``D``, B-Bone rolls change sign with the mirror, and the posed mesh is
   the same.  The assigned action's keys (values and handles) get the same per-channel
   factors.  A non-uniform ``S`` shears a rotated bone, which no rest pose reproduces: the
   rest and any pose made of locations (and rotations about an axis the scale leaves alone)
   stay in place, other rotations now turn rigidly (what engines do).
3. Children of the armature keep their world matrix through their parent inverse, except a
   mesh the mirror left mirrored: that mirror goes into its mesh data (with its shape keys),
   its faces flip so normals still point out, and its world matrix is proper (glTF's exporter
   bakes the world matrix into a skinned mesh without flipping faces).

Nothing is changed until every refusal has been checked.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Euler, Matrix, Quaternion, Vector
from numpy.typing import NDArray

from ...core import tolerances
from ...core.errors import InputError
from ..build.objects import _enter_edit, _leave_edit
from ..run.audit_scene import armature_modifiers

#: The finding codes this module fixes.
SCALE_CODES = ("non-uniform-armature-scale", "negative-armature-scale")

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class _BoneMap:
    """How one bone's channels change.  ``matrix`` (D) maps old bone-local vectors to new ones;
    ``signs`` is its orthogonal part (the conjugation of rotations); ``factors`` is D's diagonal
    when D is diagonal (per-axis factors valid for keys), else None.  ``location`` and
    ``location_factors`` are the same for the frame the location channel lives in (the bone's,
    or with Local Location off its parent's, or the armature's for a root)."""

    matrix: F64
    signs: F64
    factors: F64 | None
    location: F64
    location_factors: F64 | None


def _m(matrix: object) -> F64:
    return np.array(matrix, dtype=np.float64)


def blender_scale(diagonal: F64) -> float:
    """Blender's ``mat3_to_scale`` of a diagonal matrix: the length of the unit (1,1,1)/sqrt 3 mapped."""
    return float(np.sqrt(np.mean(np.square(diagonal))))


def _new_frame(rest: F64, s: F64) -> F64:
    """(3, 3) the rest frame the edit gives a bone: Y along ``S (tail - head)``, Z as close to
    ``S z`` as a frame perpendicular to Y allows (EditBone.align_roll)."""
    y = s * rest[:3, 1]
    y /= np.linalg.norm(y)
    z = s * rest[:3, 2]
    z -= (z @ y) * y
    z /= np.linalg.norm(z)
    return np.column_stack([np.cross(y, z), y, z])


def _polar_orthogonal(d: F64) -> F64:
    u, _, vt = np.linalg.svd(d)
    out: F64 = u @ vt
    return out


def _diagonal(d: F64) -> F64 | None:
    """D's diagonal when its off-diagonal entries are rounding, else None."""
    off = d - np.diag(np.diag(d))
    return np.diag(d).copy() if np.abs(off).max() <= tolerances.SCALE_FIX_AXIS_ALIGNED_RELATIVE * np.abs(d).max() \
        else None


def bone_maps(arm: bpy.types.Object, s: F64) -> dict[str, _BoneMap]:
    """Per bone, how its channels map under the scale ``s`` (3,) (computed from the frames the
    edit will give, so refusals come before any change)."""
    frames = {}
    for bone in arm.data.bones:
        rest = _m(bone.matrix_local)[:3, :3]
        frames[bone.name] = _new_frame(rest, s).T @ np.diag(s) @ rest
    out = {}
    for bone in arm.data.bones:
        d = frames[bone.name]
        factors = _diagonal(d)
        signs = np.diag(np.sign(factors)) if factors is not None else _polar_orthogonal(d)
        # Local Location off: the location is along the parent's axes (the armature's for a root).
        loc = d if bone.use_local_location else (frames[bone.parent.name] if bone.parent else np.diag(s))
        out[bone.name] = _BoneMap(d, signs, factors, loc, _diagonal(loc))
    return out


# ------------------------------------------------------------------ channels and keys

_ROTATIONS = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")
_CURVES = {"bbone_curveinx": 0, "bbone_curveoutx": 0, "bbone_curveinz": 2, "bbone_curveoutz": 2}
_ROLLS = ("bbone_rollin", "bbone_rollout")


def _channel_factor(m: _BoneMap, prop: str, index: int) -> float | None:
    """The factor of one animatable pose-bone channel component, 1.0 if it never changes, None
    when the component mixes with others (no per-key factor exists)."""
    det = float(np.linalg.det(m.signs))
    axis = np.diag(m.signs)
    aligned = m.factors is not None
    if prop == "location":
        return float(m.location_factors[index]) if m.location_factors is not None else None
    if prop in ("rotation_quaternion", "rotation_axis_angle"):
        return 1.0 if index == 0 else (det * float(axis[index - 1]) if aligned else None)
    if prop == "rotation_euler":
        return det * float(axis[index]) if aligned else None
    if prop in _CURVES:
        return float(m.factors[_CURVES[prop]]) if m.factors is not None else None
    if prop in _ROLLS:
        return det * float(axis[1]) if aligned else None
    return 1.0


def _map_pose_bone(pb: bpy.types.PoseBone, m: _BoneMap) -> None:
    """The current channels of one pose bone, mapped (also when D is not diagonal)."""
    pb.location = Vector((m.location @ _m(pb.location)).tolist())
    det = float(np.linalg.det(m.signs))
    q = _m(pb.rotation_quaternion)
    pb.rotation_quaternion = Quaternion((q[0], *(det * m.signs @ q[1:]).tolist()))
    aa = _m(pb.rotation_axis_angle)
    pb.rotation_axis_angle = (aa[0], *(det * m.signs @ aa[1:]).tolist())
    euler = pb.rotation_euler
    if m.factors is not None:
        pb.rotation_euler = Euler((det * np.diag(m.signs) * _m(euler)).tolist(), euler.order)
    else:
        turned = m.signs @ _m(euler.to_matrix()) @ m.signs.T
        pb.rotation_euler = Matrix(turned.tolist()).to_euler(euler.order, euler)
    for prop in (*_CURVES, *_ROLLS):
        factor = _channel_factor(m, prop, 0)
        if factor is not None:
            setattr(pb, prop, getattr(pb, prop) * factor)


def _pose_path(path: str) -> tuple[str, str] | None:
    """('bone', 'property') of an F-curve path ``pose.bones["bone"].property``, else None."""
    if not path.startswith('pose.bones["') or '"].' not in path:
        return None
    bone, _, prop = path[len('pose.bones["'):].partition('"].')
    return bone.replace('\\"', '"'), prop


def action_fcurves(action: bpy.types.Action) -> list[bpy.types.FCurve]:
    """Every F-curve of an action: layered actions (Blender 4.4+) through their channel bags."""
    if getattr(action, "layers", None):
        return [fc for layer in action.layers for strip in layer.strips
                for bag in strip.channelbags for fc in bag.fcurves]
    return list(getattr(action, "fcurves", ()))


def _keyed_changes(arm: bpy.types.Object, maps: dict[str, _BoneMap]) -> list[tuple[bpy.types.FCurve, float]]:
    """The assigned action's pose-bone F-curves that change, with their factor; InputError when
    one has no factor, an action is shared or NLA strips pose the bones (nothing is changed)."""
    anim = arm.animation_data
    if anim is None:
        return []
    for track in anim.nla_tracks:
        for strip in track.strips:
            keyed = [p for fc in action_fcurves(strip.action) if (p := _pose_path(fc.data_path))] \
                if strip.action else []
            if keyed:
                raise InputError(f"'{arm.name}': NLA strip '{strip.name}' plays action '{strip.action.name}', "
                                 f"which keys bone '{keyed[0][0]}'; the scale fix maps the assigned action only. "
                                 "Bake or remove the strips, then fix")
    action = anim.action
    if action is None:
        return []
    others = [o.name for o in bpy.data.objects if o != arm and o.animation_data is not None
              and o.animation_data.action == action]
    if others:
        raise InputError(f"'{arm.name}': action '{action.name}' is also used by {', '.join(others)}; "
                         "its keys cannot change for one of them. Make it single user, then fix")
    out = []
    for fc in action_fcurves(action):
        parsed = _pose_path(fc.data_path)
        if parsed is None or parsed[0] not in maps:
            continue
        bone, prop = parsed
        factor = _channel_factor(maps[bone], prop, fc.array_index)
        if factor is None:
            raise InputError(f"'{arm.name}': action '{action.name}' keys {prop}[{fc.array_index}] of bone "
                             f"'{bone}', whose rest frame is not aligned with the non-uniform scale, so each "
                             "key would mix with the other axes' keys. Clear those keys (or apply the scale "
                             "with the keys baked to locations along the scale's axes), then fix")
        if factor != 1.0:
            out.append((fc, factor))
    return out


def _scale_fcurve(fc: bpy.types.FCurve, factor: float) -> None:
    for k in fc.keyframe_points:
        k.co[1] *= factor
        k.handle_left[1] *= factor
        k.handle_right[1] *= factor
    fc.update()


# ------------------------------------------------------------------ the fix

def armature_basis_scale(arm: bpy.types.Object) -> F64:
    """(3,) the object's scale in its basis matrix: ``scale * delta_scale``."""
    return _m(arm.scale) * _m(arm.delta_scale)


def _still_scaled(world: F64) -> str:
    """Why a world matrix still gets a scale finding, or ''."""
    if np.linalg.det(world[:3, :3]) < 0:
        return "mirrored"
    norms = np.linalg.norm(world[:3, :3], axis=0)
    if np.ptp(norms) > tolerances.NON_UNIFORM_SCALE_RELATIVE * norms.max():
        return f"scaled {norms.round(4).tolist()}"
    return ""


def _check(context: bpy.types.Context, arm: bpy.types.Object, s: F64) -> None:
    if arm.mode == "EDIT":
        raise InputError(f"'{arm.name}' is in Edit Mode; leave it, then fix")
    if context.view_layer.objects.get(arm.name) != arm:
        raise InputError(f"'{arm.name}' is not in view layer '{context.view_layer.name}' (an excluded "
                         "collection?); its rest pose is edited in Edit Mode there. Include it, then fix")
    if arm.data.users > 1:
        users = [o.name for o in bpy.data.objects if o.data == arm.data and o != arm]
        raise InputError(f"armature data '{arm.data.name}' of '{arm.name}' is shared with "
                         f"{', '.join(users) or 'another user'}; its rest pose cannot change for one of them. "
                         "Make it single user (Object > Relations), then fix")
    if np.any(np.abs(s) <= tolerances.SCALE_FIX_SMALLEST):
        raise InputError(f"'{arm.name}' has a zero scale {s.round(6).tolist()}; set it by hand")
    rest_world = _m(arm.matrix_world) @ np.diag([*(1.0 / s), 1.0])
    why = _still_scaled(rest_world)
    if why:
        parent = arm.parent.name if arm.parent else "its parent"
        raise InputError(f"'{arm.name}' would stay {why} without its own scale: the scale comes from "
                         f"'{parent}'. Apply the parent's scale first (Ctrl+A), then fix")


def _mirrored_children(arm: bpy.types.Object, s: F64) -> list[bpy.types.Object]:
    """Skinned mesh children whose world stays mirrored unless the mirror goes into their data."""
    if np.prod(s) >= 0:
        return []
    out = [c for c in arm.children if c.type == "MESH" and c.parent_type in ("OBJECT", "ARMATURE")
           and any(m.object == arm for m in armature_modifiers(c)) and np.linalg.det(_m(c.matrix_world)[:3, :3]) < 0]
    for c in out:
        if c.data.users > 1:
            raise InputError(f"mesh data '{c.data.name}' of '{c.name}' is shared; the mirror of '{arm.name}' "
                             "goes into it. Make it single user, then fix")
    return out


def _keep_world(obj: bpy.types.Object, world: Matrix) -> None:
    """Give ``obj`` the parent inverse that puts it back at ``world`` under its parent's new matrix."""
    parent_part = obj.matrix_world @ (obj.matrix_parent_inverse @ obj.matrix_basis).inverted()
    obj.matrix_parent_inverse = parent_part.inverted() @ world @ obj.matrix_basis.inverted()


def _edit_rest(view_layer: bpy.types.ViewLayer, arm: bpy.types.Object, s: F64, maps: dict[str, _BoneMap]) -> None:
    """Rest bones times ``S``, in Edit Mode (the only place heads, tails and rolls are written)."""
    k = blender_scale(s)
    try:
        previous, previous_mode = _enter_edit(view_layer, arm)
    except RuntimeError as exc:  # nothing is changed yet
        raise InputError(f"cannot enter Edit Mode on '{arm.name}' ({exc}); make it and its collection "
                         "visible, then fix") from exc
    try:
        # Read every bone first: writing a connected bone's head moves its parent's tail.
        rest = [(eb, s * _m(eb.head), s * _m(eb.tail), s * _m(eb.z_axis)) for eb in arm.data.edit_bones]
        for eb, head, tail, _ in rest:
            eb.head, eb.tail = Vector(head.tolist()), Vector(tail.tolist())
        for eb, _, _, z in rest:
            eb.align_roll(Vector(z.tolist()))
            eb.head_radius *= k
            eb.tail_radius *= k
            eb.envelope_distance *= k
            eb.bbone_x *= k
            eb.bbone_z *= k
            for prop in (*_CURVES, *_ROLLS):
                factor = _channel_factor(maps[eb.name], prop, 0)
                if factor is not None:
                    setattr(eb, prop, getattr(eb, prop) * factor)
    finally:
        _leave_edit(view_layer, previous, previous_mode)


def apply_armature_scale(context: bpy.types.Context, arm: bpy.types.Object) -> tuple[str, int]:
    """Move ``arm``'s object scale into its rest pose, pose, keys and children; (message, bones changed)."""
    view_layer = context.view_layer
    view_layer.update()  # world matrices of this frame and pose, evaluated
    s = armature_basis_scale(arm)
    _check(context, arm, s)
    if np.array_equal(s, np.ones(3)):
        return f"'{arm.name}' has no object scale left to apply", 0
    maps = bone_maps(arm, s)
    keys = _keyed_changes(arm, maps)
    baked = _mirrored_children(arm, s)
    children = list(arm.children)
    world_before = {c.name: c.matrix_world.copy() for c in [*children, *(g for b in baked for g in b.children)]}

    # 1. Rest bones.
    hidden = arm.hide_viewport
    arm.hide_viewport = False  # Edit Mode refuses a hidden object
    try:
        _edit_rest(view_layer, arm, s, maps)
    finally:
        arm.hide_viewport = hidden

    # 2. The object, the pose and the keys.
    arm.scale = (1.0, 1.0, 1.0)
    arm.delta_scale = (1.0, 1.0, 1.0)
    for pb in arm.pose.bones:
        _map_pose_bone(pb, maps[pb.name])
    for fc, factor in keys:
        _scale_fcurve(fc, factor)
    view_layer.update()

    # 3. Children: the same world matrix, or (mirrored meshes) the mirror in their data.
    kept, mirrored = [], []
    for c in children:
        now = c.matrix_world.copy()
        if c in baked:
            x = now.inverted() @ world_before[c.name]  # the armature's scale in the mesh's own space
            c.data.transform(x, shape_keys=True)
            c.data.flip_normals()
            c.data.update()
            mirrored.append(c.name)
        else:
            _keep_world(c, world_before[c.name])
            kept.append(c.name)
    view_layer.update()
    # Objects parented to a mesh whose matrix now leaves out the mirror: the same world matrix.
    for c in [g for name in mirrored for g in bpy.data.objects[name].children]:
        _keep_world(c, world_before[c.name])
    if mirrored:
        view_layer.update()

    what = [f"applied scale {s.round(4).tolist()} of '{arm.name}' to its rest pose ({len(maps)} bones)"]
    if keys:
        what.append(f"{len(keys)} F-curves of '{arm.animation_data.action.name}' mapped")
    if kept:
        what.append(f"children kept their world transform ({', '.join(kept)})")
    if mirrored:
        what.append(f"the mirror went into the mesh data of {', '.join(mirrored)} (faces flipped)")
    if np.ptp(np.abs(s)) > tolerances.NON_UNIFORM_SCALE_RELATIVE * np.abs(s).max():
        what.append("rotated bones now turn rigidly (a non-uniform scale sheared them)")
    return "; ".join(what), len(maps)
