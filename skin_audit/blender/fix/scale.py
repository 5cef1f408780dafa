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
   its signs (quaternion, axis-angle and Euler Y and Z components change sign), B-Bone curve
   offsets scale by ``D``, B-Bone rolls change sign with the mirror, and the posed mesh is
   the same.  The keys of the actions it plays (assigned, and in NLA strips; values and
   handles) get the same per-channel factors; location keys a non-uniform ``S`` mixes across
   axes are mixed key by key where that is exact.  A non-uniform ``S`` shears a rotated bone,
   which no rest pose reproduces: the rest and any pose made of locations (and rotations
   about an axis the scale leaves alone) stay in place, other rotations now turn rigidly
   (what engines do).
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
from mathutils import Matrix, Vector
from numpy.typing import NDArray

from ...core import tolerances
from ...core.errors import InputError
from ..build.objects import enter_edit, leave_edit
from ..run.audit_scene import armature_modifiers

#: The finding codes this module fixes.
SCALE_CODES = ("non-uniform-armature-scale", "negative-armature-scale")

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class _BoneMap:
    """How one bone's channels change.

    ``matrix`` (D, 3 x 3) maps old bone-local vectors to new ones and ``location`` the same for
    the frame the location channel lives in (the bone's; with Local Location off its parent's,
    or the armature's for a root).  ``mirror`` is -1 under a mirror, else 1: the new frame's X
    axis is the old one's image reversed, so rotations are conjugated by ``diag(mirror, 1, 1)``.
    """

    matrix: F64
    location: F64
    mirror: float

    def aligned(self, d: F64) -> bool:
        """Whether ``d`` is diagonal: per-axis factors then map each channel, and each key."""
        off = d - np.diag(np.diag(d))
        return bool(np.abs(off).max() <= tolerances.SCALE_FIX_AXIS_ALIGNED_RELATIVE * np.abs(d).max())

    def factor(self, prop: str, index: int) -> float | None:
        """The factor of one pose-bone channel component (1.0: unchanged); None for a location
        component that mixes with the other two (a non-uniform scale across the bone's axes)."""
        if prop == "location":
            return float(self.location[index, index]) if self.aligned(self.location) else None
        # A rotation conjugated by diag(m, 1, 1), m = +-1: its axis becomes m * diag(m, 1, 1) axis,
        # its angle stays; so X components stay and Y, Z ones (and rolls about Y) take m.
        if prop in ("rotation_quaternion", "rotation_axis_angle"):
            return 1.0 if index in (0, 1) else self.mirror
        if prop == "rotation_euler":
            return 1.0 if index == 0 else self.mirror
        if prop in _ROLLS:
            return self.mirror
        if prop in _CURVES:  # offsets along the bone's X or Z (exact when D is diagonal)
            return float(self.matrix[_CURVES[prop], _CURVES[prop]])
        return 1.0


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


def bone_maps(arm: bpy.types.Object, s: F64) -> dict[str, _BoneMap]:
    """Per bone, how its channels map under the scale ``s`` (3,) (computed from the frames the
    edit will give, so refusals come before any change)."""
    frames = {b.name: _new_frame(_m(b.matrix_local)[:3, :3], s).T @ np.diag(s) @ _m(b.matrix_local)[:3, :3]
              for b in arm.data.bones}
    mirror = float(np.sign(np.prod(s)))
    out = {}
    for bone in arm.data.bones:
        # Local Location off: the location is along the parent's axes (the armature's for a root).
        loc = frames[bone.name] if bone.use_local_location else \
            (frames[bone.parent.name] if bone.parent else np.diag(s))
        out[bone.name] = _BoneMap(frames[bone.name], loc, mirror)
    return out


# ------------------------------------------------------------------ channels and keys

_CURVES = {"bbone_curveinx": 0, "bbone_curveoutx": 0, "bbone_curveinz": 2, "bbone_curveoutz": 2}
_ROLLS = ("bbone_rollin", "bbone_rollout")
_PER_AXIS = ("rotation_quaternion", "rotation_axis_angle", "rotation_euler", *_CURVES, *_ROLLS)


def _axis_factor(m: _BoneMap, prop: str, index: int) -> float:
    factor = m.factor(prop, index)
    if factor is None:  # only a location mixes; it is mapped by its matrix instead
        raise AssertionError(f"{prop} has no per-axis factor")
    return factor


def _map_pose_bone(pb: bpy.types.PoseBone, m: _BoneMap) -> None:
    """The current channels of one pose bone, mapped."""
    pb.location = Vector((m.location @ _m(pb.location)).tolist())
    for prop in _PER_AXIS:
        value = getattr(pb, prop)
        if isinstance(value, float):
            setattr(pb, prop, value * _axis_factor(m, prop, 0))
        else:
            setattr(pb, prop, [v * _axis_factor(m, prop, i) for i, v in enumerate(value)])


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


def _strips(strips: bpy.types.bpy_prop_collection) -> list[bpy.types.NlaStrip]:
    """NLA strips, meta strips' own strips included."""
    return [x for strip in strips for x in (strip, *_strips(strip.strips))]


def played_actions(obj: bpy.types.Object) -> list[bpy.types.Action]:
    """The actions ``obj`` plays: the assigned one and those of its NLA strips (glTF imports put
    every animation in a strip), each once."""
    anim = obj.animation_data
    if anim is None:
        return []
    found = [anim.action] + [s.action for t in anim.nla_tracks for s in _strips(t.strips)]
    return list({a.name: a for a in found if a is not None}.values())


@dataclass
class _KeyEdits:
    """What the keys need: a factor per F-curve, or a bone's three location F-curves mixed by a matrix."""

    scaled: list[tuple[bpy.types.FCurve, float]]
    mixed: list[tuple[list[bpy.types.FCurve], F64]]


def _mixable(curves: list[bpy.types.FCurve]) -> bool:
    """Three F-curves whose keys can be mixed linearly and stay the same curves: keys on the
    same frames, and every segment linear or constant, or Bezier with free or vector handles
    on the same frames (Blender recomputes automatic and aligned handles, not linearly)."""
    keys = [list(fc.keyframe_points) for fc in curves]
    if len({len(k) for k in keys}) != 1 or len({fc.extrapolation for fc in curves}) != 1:
        return False
    for points in zip(*keys, strict=True):
        if len({(p.co[0], p.interpolation) for p in points}) != 1:
            return False
        if points[0].interpolation == "BEZIER" and not all(
                {p.handle_left_type, p.handle_right_type} <= {"FREE", "VECTOR"} for p in points):
            return False
        if len({(p.handle_left[0], p.handle_right[0]) for p in points}) != 1 and points[0].interpolation == "BEZIER":
            return False
    return True


def _keyed_changes(arm: bpy.types.Object, maps: dict[str, _BoneMap]) -> _KeyEdits:
    """The pose-bone F-curves of the actions ``arm`` plays that change; InputError when keys cannot
    follow or another object plays the action (nothing is changed)."""
    edits = _KeyEdits([], [])
    anim = arm.animation_data
    drivers = list(anim.drivers) if anim is not None else []
    for action, fc in [*((a, fc) for a in played_actions(arm) for fc in action_fcurves(a)),
                       *((None, d) for d in drivers)]:
        if fc.data_path in ("scale", "delta_scale"):
            what = f"action '{action.name}' keys" if action is not None else "a driver sets"
            raise InputError(f"'{arm.name}': {what} the object's {fc.data_path}, which the fix sets to 1 for "
                             "good. Remove those keys or that driver (or apply the scale yourself per frame), "
                             "then fix")
    for action in played_actions(arm):
        keyed = [(fc, p) for fc in action_fcurves(action) if (p := _pose_path(fc.data_path)) and p[0] in maps]
        if not keyed:
            continue
        others = [o.name for o in bpy.data.objects if o != arm and action in played_actions(o)]
        if others:
            raise InputError(f"'{arm.name}': action '{action.name}' is also played by {', '.join(others)}; "
                             "its keys cannot change for one of them. Make it single user, then fix")
        locations: dict[str, list[bpy.types.FCurve]] = {}
        for fc, (bone, prop) in keyed:
            factor = maps[bone].factor(prop, fc.array_index)
            if prop == "location" and factor is None:
                locations.setdefault(bone, []).append(fc)
            elif factor is not None and factor != 1.0:
                edits.scaled.append((fc, factor))
        for bone, curves in locations.items():
            curves.sort(key=lambda fc: fc.array_index)
            if [fc.array_index for fc in curves] != [0, 1, 2] or not _mixable(curves):
                raise InputError(
                    f"'{arm.name}': action '{action.name}' keys the location of bone '{bone}', whose axes the "
                    "non-uniform scale mixes: its X, Y and Z keys are mixed only when all three are keyed on "
                    "the same frames with Linear or Constant interpolation (or Free or Vector handles). Set "
                    "those keys so (or clear them), then fix")
            edits.mixed.append((curves, maps[bone].location))
    return edits


def _mix_fcurves(curves: list[bpy.types.FCurve], matrix: F64) -> None:
    """Key values and handle values of three location F-curves, mixed: ``new = matrix @ old``."""
    for attr in ("co", "handle_left", "handle_right"):
        old = np.array([[getattr(p, attr)[1] for p in fc.keyframe_points] for fc in curves])
        new = matrix @ old
        for fc, row in zip(curves, new, strict=True):
            for p, value in zip(fc.keyframe_points, row, strict=True):
                getattr(p, attr)[1] = float(value)
    for fc in curves:
        fc.update()


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
        previous, previous_mode = enter_edit(view_layer, arm)
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
                setattr(eb, prop, getattr(eb, prop) * _axis_factor(maps[eb.name], prop, 0))
    finally:
        leave_edit(view_layer, previous, previous_mode)


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
    for fc, factor in keys.scaled:
        _scale_fcurve(fc, factor)
    for curves, matrix in keys.mixed:
        _mix_fcurves(curves, matrix)
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
    if keys.scaled or keys.mixed:
        names = ", ".join(f"'{a.name}'" for a in played_actions(arm))
        what.append(f"{len(keys.scaled) + 3 * len(keys.mixed)} F-curves of {names} mapped")
    if kept:
        what.append(f"children kept their world transform ({', '.join(kept)})")
    if mirrored:
        what.append(f"the mirror went into the mesh data of {', '.join(mirrored)} (faces flipped)")
    if np.ptp(np.abs(s)) > tolerances.NON_UNIFORM_SCALE_RELATIVE * np.abs(s).max():
        what.append("rotated bones now turn rigidly (a non-uniform scale sheared them)")
    return "; ".join(what), len(maps)
