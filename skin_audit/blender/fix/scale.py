# SPDX-License-Identifier: GPL-3.0-or-later
"""Apply an armature object's scale to its rest pose, keeping every skinned result in place.

The fix of ``non-uniform-armature-scale`` and ``negative-armature-scale`` (docs/fixes.md).
With ``S`` the object's scale (``scale * delta_scale``, a diagonal in armature space) and
``A`` its world matrix, the object becomes ``A' = A S^-1`` (scale 1) and everything in
armature space is mapped by ``S``, so that ``A' (S x) = A x``:

1. Rest bones: heads and tails times ``S``; the roll turns the bone's Z axis to ``S z`` (for
   a mirror exactly the mirrored Z: the bone's X axis flips, and the frame stays a proper
   rotation); envelope radii, envelope distance and B-Bone display sizes times Blender's
   scale of ``S`` (``mat3_to_scale``, as Apply Scale does), written in Object Mode.
2. Pose channels live in each bone's rest frame ``B``; the new frame is ``B'``, and
   ``D = B'^T S B`` maps one to the other.  For a uniform scale, with or without a mirror,
   ``D`` is ``s * diag(+-1, 1, 1)``: locations become ``D loc``, rotations are conjugated by
   its signs (quaternion, axis-angle and Euler Y and Z components change sign), B-Bone curve
   offsets scale by ``D``, B-Bone rolls change sign with the mirror, and the posed mesh is
   the same.  The keys of the slot each action plays (assigned, and in NLA strips; values and
   handles) get the same per-channel factors; location keys a non-uniform ``S`` mixes across
   axes are mixed key by key where that is exact.  A non-uniform ``S`` shears a rotated bone,
   which no rest pose reproduces: the rest and any pose made of locations (and rotations
   about an axis the scale leaves alone) stay in place, other rotations now turn rigidly
   (what engines do); B-Bone curve offsets under it are refused (posed ones bend differently
   even along the scale's axes, rest ones once the bone twists).
3. Children of the armature keep their world matrix through their parent inverse, except a
   mesh the mirror left mirrored: a reflection through one of its local axes goes into its
   mesh data (with its shape keys; the rest of the scale stays on the object, so modifier
   units hold), its faces flip so normals still point out, its custom normals are set again
   in the flipped corner order, and its world matrix is proper (glTF's exporter bakes the
   world matrix into a skinned mesh without flipping faces).

Whatever this cannot carry (constraints, drivers and modifiers that read the armature or its
bones, children elsewhere, library data, F-curve modifiers, see ``_unmappable``) is refused,
and nothing is changed until every refusal has been checked.  The arithmetic (new frames, the
map ``D`` and its per-channel factors) is ``core/fixes/scale.py``; this module reads and writes Blender.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Matrix, Vector
from numpy.typing import NDArray

from ...core import tolerances
from ...core.errors import InputError
from ...core.fixes.scale import (
    CURVES,
    PER_AXIS,
    ROLLS,
    SCALE_CODES,
    BoneMap,
    blender_scale,
    bone_maps,
    pose_path,
    still_scaled,
)
from ..actions import played_actions, slot_fcurves
from ..build.objects import enter_edit, leave_edit
from ..run.audit_scene import armature_modifiers

__all__ = ["SCALE_CODES", "apply_armature_scale", "armature_basis_scale"]

F64 = NDArray[np.float64]


def _m(matrix: object) -> F64:
    return np.array(matrix, dtype=np.float64)


def _bone_maps(arm: bpy.types.Object, s: F64) -> dict[str, BoneMap]:
    """Per bone, how its channels map under the scale ``s`` (3,) (computed from the frames the
    edit will give, so refusals come before any change)."""
    bones = arm.data.bones
    return bone_maps({b.name: _m(b.matrix_local)[:3, :3] for b in bones},
                     {b.name: b.parent.name if b.parent else None for b in bones},
                     {b.name: b.use_local_location for b in bones}, s)


# ------------------------------------------------------------------ channels and keys

def _map_pose_bone(pb: bpy.types.PoseBone, m: BoneMap) -> None:
    """The current channels of one pose bone, mapped."""
    pb.location = Vector((m.location @ _m(pb.location)).tolist())
    for prop in PER_AXIS:
        value = getattr(pb, prop)
        if isinstance(value, float):
            setattr(pb, prop, value * m.axis_factor(prop, 0))
        else:
            setattr(pb, prop, [v * m.axis_factor(prop, i) for i, v in enumerate(value)])


def _plays(obj: bpy.types.Object, action: bpy.types.Action, slot: bpy.types.ActionSlot | None) -> bool:
    return any(a == action and (slot is None or (other is not None and other.handle == slot.handle))
               for a, other in played_actions(obj.animation_data))


def _linked(data: bpy.types.ID | None) -> bool:
    """Library data (edits are lost on save: the file keeps a link) or a library override."""
    return data is not None and (data.library is not None or data.override_library is not None)


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


def _keyed_changes(arm: bpy.types.Object, maps: dict[str, BoneMap]) -> _KeyEdits:
    """The pose-bone F-curves of the actions ``arm`` plays that change; InputError when keys cannot
    follow or another object plays the action (nothing is changed)."""
    edits = _KeyEdits([], [])
    anim = arm.animation_data
    drivers = list(anim.drivers) if anim is not None else []
    for action, fc in [*((a, fc) for a, slot in played_actions(arm.animation_data) for fc in slot_fcurves(a, slot)),
                       *((None, d) for d in drivers)]:
        if fc.data_path in ("scale", "delta_scale"):
            what = f"action '{action.name}' keys" if action is not None else "a driver sets"
            raise InputError(f"'{arm.name}': {what} the object's {fc.data_path}, which the fix sets to 1 for "
                             "good. Remove those keys or that driver (or apply the scale yourself per frame), "
                             "then fix")
    for action, slot in played_actions(arm.animation_data):
        keyed = [(fc, p) for fc in slot_fcurves(action, slot)
                 if (p := pose_path(fc.data_path)) and p[0] in maps]
        if not keyed:
            continue
        if _linked(action):
            where = "linked from a library" if action.library is not None else "a library override"
            raise InputError(f"'{arm.name}': action '{action.name}' is {where}; keys the fix maps would revert "
                             "on save. Make it local (Object > Relations > Make Local), then fix")
        others = [o.name for o in bpy.data.objects if o != arm and _plays(o, action, slot)]
        if others:
            raise InputError(f"'{arm.name}': action '{action.name}' is also played by {', '.join(others)}; "
                             "its keys cannot change for one of them. Make it single user, then fix")
        locations: dict[str, list[bpy.types.FCurve]] = {}
        changed = []
        for fc, (bone, prop) in keyed:
            factor = maps[bone].factor(prop, fc.array_index)
            if prop == "location" and factor is None:
                locations.setdefault(bone, []).append(fc)
                changed.append(fc)
            elif factor is not None and factor != 1.0:
                edits.scaled.append((fc, factor))
                changed.append(fc)
        modified = [f"{fc.data_path}[{fc.array_index}]" for fc in changed if any(not m.mute for m in fc.modifiers)]
        if modified:
            raise InputError(f"'{arm.name}': action '{action.name}' has F-curve modifiers on channels the fix "
                             f"maps ({', '.join(modified)}); their output would not follow the keys. Apply or "
                             "remove those modifiers (Channel > Bake Channels), then fix")
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


def _still_scaled_why(arm: bpy.types.Object) -> str:
    """Where the scale the armature keeps without its own comes from: its constraints, its parent
    or its parent inverse."""
    constraints = ", ".join(f"'{c.name}'" for c in _active(arm.constraints))
    if constraints:
        return (f"its object constraints ({constraints}) set its world matrix, not its scale alone. Apply "
                "them (Object > Apply > Visual Transform) and remove them, then fix")
    if arm.parent is not None:
        why = still_scaled(_m(arm.parent.matrix_world))
        if why:
            return (f"the scale comes from its parent '{arm.parent.name}' ({why}). Apply the parent's scale "
                    "first (Ctrl+A), then fix")
    if still_scaled(_m(arm.matrix_parent_inverse)):
        return (f"the scale sits in the parent inverse of '{arm.name}' (set when it was parented). Apply it "
                "(Object > Apply > Parent Inverse), then fix")
    return (f"its parent '{arm.parent.name if arm.parent else ''}' turns the armature's own scale axes. Apply "
            "the parent's rotation and scale first, then fix")


def _check(context: bpy.types.Context, arm: bpy.types.Object, s: F64) -> None:
    if arm.mode == "EDIT":
        raise InputError(f"'{arm.name}' is in Edit Mode; leave it, then fix")
    if context.view_layer.objects.get(arm.name) != arm:
        raise InputError(f"'{arm.name}' is not in view layer '{context.view_layer.name}' (an excluded "
                         "collection?); its rest pose is edited in Edit Mode there. Include it, then fix")
    for data in (arm, arm.data):
        if _linked(data):
            where = "linked from a library" if data.library is not None else "a library override"
            raise InputError(f"'{data.name}' of '{arm.name}' is {where}; its rest pose and scale cannot be "
                             "changed for good here. Make it local (Object > Relations > Make Local), then fix")
    if arm.data.users > 1:
        users = [o.name for o in bpy.data.objects if o.data == arm.data and o != arm]
        raise InputError(f"armature data '{arm.data.name}' of '{arm.name}' is shared with "
                         f"{', '.join(users) or 'another user'}; its rest pose cannot change for one of them. "
                         "Make it single user (Object > Relations), then fix")
    if np.any(np.abs(s) <= tolerances.SCALE_FIX_SMALLEST):
        raise InputError(f"'{arm.name}' has a zero scale {s.round(6).tolist()}; set it by hand")
    rest_world = _m(arm.matrix_world) @ np.diag([*(1.0 / s), 1.0])
    why = still_scaled(rest_world)
    if why:
        raise InputError(f"'{arm.name}' would stay {why} without its own scale: {_still_scaled_why(arm)}")
    blocked = _unmappable(context, arm, s)
    if blocked:
        raise InputError(
            f"'{arm.name}': the fix cannot carry these through the new bone axes and units, so they would give "
            f"other results afterwards: {'; '.join(blocked)}. Apply, remove or mute them (or apply the scale "
            "by hand), then fix")


def _active(items: bpy.types.bpy_prop_collection) -> list[bpy.types.Constraint]:
    return [c for c in items if not c.mute and c.influence > 0]


def _points_at(struct: bpy.types.bpy_struct, ids: tuple[bpy.types.ID, ...]) -> bool:
    """Whether an RNA struct (constraint, modifier) has a pointer property (or an Armature
    constraint target, or a Geometry Nodes input) set to one of ``ids``."""
    values = [getattr(struct, p.identifier, None) for p in struct.bl_rna.properties if p.type == "POINTER"]
    values += [t.target for t in getattr(struct, "targets", ()) if hasattr(t, "target")]
    if getattr(struct, "type", "") == "NODES":
        values += [struct[k] for k in struct.keys()]
    return any(isinstance(v, bpy.types.ID) and v in ids for v in values)


_ANIMATED = ("objects", "meshes", "shape_keys", "armatures", "materials", "node_groups", "scenes", "worlds",
             "lights", "cameras", "curves", "lattices", "textures", "particles", "hair_curves", "pointclouds")


def _readers(target: bpy.types.Object, children: set[bpy.types.Object]) -> list[str]:
    """What reads ``target`` (or its data) and so sees it change: every active constraint of
    ``children``; constraints (of objects and of bones) elsewhere that target it; modifiers other
    than Armature that point at it; drivers on it or its data, or reading them."""
    ids = (target, target.data)
    out = []
    for o in bpy.data.objects:
        if o != target:
            own = _active(o.constraints)
            if o in children:
                out += [f"constraint '{c.name}' of child '{o.name}'" for c in own]
            else:
                out += [f"constraint '{c.name}' of '{o.name}' (targets '{target.name}')"
                        for c in own if _points_at(c, ids)]
            if o.pose is not None:
                out += [f"constraint '{c.name}' on bone '{pb.name}' of '{o.name}' (targets '{target.name}')"
                        for pb in o.pose.bones for c in _active(pb.constraints) if _points_at(c, ids)]
        out += [f"modifier '{m.name}' of '{o.name}' (uses '{target.name}')" for m in o.modifiers
                if m.type != "ARMATURE" and _points_at(m, ids)]
    for name in _ANIMATED:
        for data in getattr(bpy.data, name, ()):
            anim = getattr(data, "animation_data", None)
            for d in (anim.drivers if anim is not None else ()):
                if d.mute:
                    continue
                reads = any(t.id in ids for v in d.driver.variables for t in v.targets)
                if data in ids or reads:
                    verb = "reads" if reads else "sets"
                    out.append(f"driver of '{data.name}' {d.data_path}[{d.array_index}] ({verb} '{target.name}')")
    return out


def _unmappable(context: bpy.types.Context, arm: bpy.types.Object, s: F64) -> list[str]:
    """The rig features whose result the new bone axes and units change, which the fix does not map:
    every active constraint of the armature, its bones and its children; constraints, modifiers
    (other than Armature) and drivers elsewhere that read the armature; drivers on the armature;
    children outside this view layer (their world matrix is not evaluated here) or linked; B-Bone
    curve offsets (rest, posed or keyed) under a non-uniform scale."""
    out = [f"object constraint '{c.name}' of '{arm.name}'" for c in _active(arm.constraints)]
    out += [f"constraint '{c.name}' on bone '{pb.name}'" for pb in arm.pose.bones for c in _active(pb.constraints)]
    out += _readers(arm, set(arm.children))
    layer = context.view_layer.objects
    for c in arm.children:
        if layer.get(c.name) != c:
            out.append(f"child '{c.name}' outside view layer '{context.view_layer.name}' (another scene or an "
                       "excluded collection: include it or unparent it)")
        elif _linked(c):
            out.append(f"child '{c.name}' linked from a library or overridden (make it local)")
    if np.ptp(np.abs(s)) > tolerances.NON_UNIFORM_SCALE_RELATIVE * np.abs(s).max():
        # Measured: a posed curve offset moves the mesh under a non-uniform scale even along a scale
        # axis (0.11); a rest one stays at location poses but not when the bone twists (0.056).
        keyed = {pose_path(fc.data_path)
                 for a, slot in played_actions(arm.animation_data) for fc in slot_fcurves(a, slot)}
        for b in arm.data.bones:
            if b.bbone_segments > 1 and any(getattr(b, p) != 0.0 or getattr(arm.pose.bones[b.name], p) != 0.0
                                            or (b.name, p) in keyed for p in CURVES):
                out.append(f"B-Bone curve offsets of bone '{b.name}' (a non-uniform scale bends them "
                           "differently)")
    return out


# ------------------------------------------------------------------ children and mirrored meshes

#: Modifiers that give the same world result when a reflection goes into the mesh data (and the
#: faces flip): they work along normals, on topology or in world space (checked per modifier below).
_REFLECTION_SAFE = ("ARMATURE", "SUBSURF", "TRIANGULATE", "SOLIDIFY", "EDGE_SPLIT", "WELD", "MIRROR", "DISPLACE")


@dataclass
class _Bake:
    """A mirrored mesh child: the reflection (3, 3) that goes into its data, and its corner
    normals (L, 3) and (polygon, vertex) keys when it has custom normals."""

    obj: bpy.types.Object
    reflection: F64
    normals: F64 | None
    corners: NDArray[np.int64] | None


def _corner_keys(me: bpy.types.Mesh) -> NDArray[np.int64]:
    """(L,) one key per corner, ``polygon * V + vertex``: the same corner before and after a flip."""
    verts = np.zeros(len(me.loops), dtype=np.int64)
    me.loops.foreach_get("vertex_index", verts)
    sizes = np.zeros(len(me.polygons), dtype=np.int64)
    me.polygons.foreach_get("loop_total", sizes)
    return np.repeat(np.arange(len(sizes)), sizes) * len(me.vertices) + verts


def _corner_normals(me: bpy.types.Mesh) -> F64:
    """(L, 3) the mesh's corner normals in its own space (``Mesh.corner_normals``, Blender 4.1+)."""
    out = np.zeros(len(me.loops) * 3, dtype=np.float32)
    me.corner_normals.foreach_get("vector", out)
    return out.reshape(-1, 3).astype(np.float64)


def _closed_fans(me: bpy.types.Mesh) -> NDArray[np.bool_]:
    """(L,) corners whose vertex is smooth all round: every edge at it has two faces and is not
    sharp, and no face at it is flat (one fan closes around it)."""
    edge_verts = np.zeros(len(me.edges) * 2, dtype=np.int64)
    me.edges.foreach_get("vertices", edge_verts)
    corner_edge = np.zeros(len(me.loops), dtype=np.int64)
    me.loops.foreach_get("edge_index", corner_edge)
    corner_vert = np.zeros(len(me.loops), dtype=np.int64)
    me.loops.foreach_get("vertex_index", corner_vert)
    open_edge = np.bincount(corner_edge, minlength=len(me.edges)) != 2
    if "sharp_edge" in me.attributes:
        sharp = np.zeros(len(me.edges), dtype=bool)
        me.attributes["sharp_edge"].data.foreach_get("value", sharp)
        open_edge |= sharp
    open_vert = np.zeros(len(me.vertices), dtype=bool)
    open_vert[edge_verts.reshape(-1, 2)[open_edge].ravel()] = True
    smooth = np.zeros(len(me.polygons), dtype=bool)
    me.polygons.foreach_get("use_smooth", smooth)
    sizes = np.zeros(len(me.polygons), dtype=np.int64)
    me.polygons.foreach_get("loop_total", sizes)
    open_vert[corner_vert[np.repeat(~smooth, sizes)]] = True
    return ~open_vert[corner_vert]


def _bake_plan(c: bpy.types.Object, arm: bpy.types.Object) -> _Bake:
    """How the mirror goes into ``c``'s data: a reflection through a local axis no local-space
    Displace uses (the rest of the scale stays on the object, so modifiers keep their units);
    InputError for modifiers that would not follow."""
    blocked, axes = [], {0, 1, 2}
    for m in c.modifiers:
        ok = m.type in _REFLECTION_SAFE
        if m.type == "MIRROR":
            ok = m.mirror_object is None
        elif m.type == "DISPLACE":
            ok = m.texture is None or m.texture_coords in ("UV", "GLOBAL", "OBJECT")
            if m.direction == "RGB_TO_XYZ" and m.space == "LOCAL":
                ok = False
            elif m.direction in ("X", "Y", "Z") and m.space == "LOCAL":
                axes.discard("XYZ".index(m.direction))  # a reflection through that axis turns it round
        if not ok:
            blocked.append(f"'{m.name}' ({m.type})")
    if not axes:
        blocked.append("Displace along all three local axes")
    readers = _readers(c, set(c.children))
    if readers:
        raise InputError(f"'{c.name}': the mirror of '{arm.name}' goes into its mesh data, so its object matrix "
                         f"changes by a reflection, and these read that matrix: {'; '.join(readers)}. Apply, "
                         "remove or mute them, then fix")
    if blocked:
        raise InputError(f"'{c.name}': the mirror of '{arm.name}' goes into its mesh data, and its modifiers "
                         f"{', '.join(blocked)} work in the mesh's own axes or bound data, so they would give "
                         "another result. Apply or remove them, then fix")
    if c.data.users > 1 or _linked(c.data) or _linked(c):
        raise InputError(f"mesh data '{c.data.name}' of '{c.name}' is shared, linked or overridden; the mirror "
                         f"of '{arm.name}' goes into it. Make it single user and local, then fix")
    reflection = np.eye(3)
    reflection[min(axes), min(axes)] = -1.0
    me = c.data
    if not me.has_custom_normals:
        return _Bake(c, reflection, None, None)
    normals = _corner_normals(me)
    # Blender keeps a custom normal as an angle from the automatic one and a turn measured across
    # its fan of faces from the fan's first edge. An open fan (at a boundary, sharp edge or flat
    # face) is walked the other way after the flip, from its other end edge, which gives the same
    # normal under any pose; a closed fan (all round a smooth vertex) starts at another edge, so
    # there only the angle survives a pose exactly (measured: 0.01 off gives 0.004, 0.6 off 0.5).
    plain = me.copy()
    holder = bpy.data.objects.new(f"{c.name} automatic normals", plain)
    try:
        with bpy.context.temp_override(object=holder, active_object=holder):
            bpy.ops.mesh.customdata_custom_splitnormals_clear()
        off = np.abs(normals - _corner_normals(plain)).max(axis=1)
    finally:
        bpy.data.objects.remove(holder)
        bpy.data.meshes.remove(plain)
    deviation = float(off[_closed_fans(me)].max(initial=0.0))
    if deviation > tolerances.SCALE_FIX_CUSTOM_NORMAL_DEVIATION:
        raise InputError(
            f"'{c.name}': the mirror of '{arm.name}' goes into its mesh data with its faces flipped, and its custom "
            f"normals (up to {deviation:.3g} off the automatic ones around smooth vertices) would then bend "
            "differently under a pose: Blender stores them relative to a face edge that the flip changes. Clear "
            "them (Mesh Data > Normals > Clear Custom Split Normals) if the automatic normals will do, or apply the "
            "mirror by hand, then fix")
    return _Bake(c, reflection, normals, _corner_keys(me))


def _mirrored_children(arm: bpy.types.Object, s: F64) -> list[_Bake]:
    """Skinned mesh children whose world stays mirrored unless the mirror goes into their data."""
    if np.prod(s) >= 0:
        return []
    return [_bake_plan(c, arm) for c in arm.children if c.type == "MESH" and c.parent_type in ("OBJECT", "ARMATURE")
            and any(m.object == arm for m in armature_modifiers(c)) and np.linalg.det(_m(c.matrix_world)[:3, :3]) < 0]


def _check_children(objects: list[bpy.types.Object]) -> None:
    """Every object whose parent inverse the fix rewrites can have one: ``parent inverse @ basis``
    and its world matrix invertible (so nothing fails half way)."""
    for o in objects:
        for what, matrix in (("scale (or parent inverse)", _m(o.matrix_parent_inverse) @ _m(o.matrix_basis)),
                             ("world matrix", _m(o.matrix_world))):
            if abs(np.linalg.det(matrix[:3, :3])) <= tolerances.SCALE_FIX_SMALLEST:
                raise InputError(f"'{o.name}' (a child of '{o.parent.name}') has a zero {what}; its parent "
                                 "inverse cannot keep it in place. Give it a non-zero scale (or unparent it), "
                                 "then fix")


def _keep_world(obj: bpy.types.Object, world: Matrix) -> None:
    """Give ``obj`` the parent inverse that puts it back at ``world`` under its parent's new matrix."""
    local = obj.matrix_parent_inverse @ obj.matrix_basis
    parent_part = obj.matrix_world @ local.inverted()
    obj.matrix_parent_inverse = parent_part.inverted() @ world @ obj.matrix_basis.inverted()


def _bake(plan: _Bake) -> None:
    """The reflection into the mesh data (shape keys too), faces flipped, custom normals re-set."""
    me = plan.obj.data
    me.transform(_m4(plan.reflection), shape_keys=True)
    me.flip_normals()
    me.update()  # face and corner normal caches of the new geometry: custom normals are encoded in them
    if plan.normals is not None and plan.corners is not None:
        # The flip reorders each face's corners: find each new corner's old one by (face, vertex).
        order = np.argsort(plan.corners)
        old = order[np.searchsorted(plan.corners, _corner_keys(me), sorter=order)]
        me.normals_split_custom_set((plan.normals[old] @ plan.reflection.T).tolist())
    me.update()


def _m4(m3: F64) -> Matrix:
    out = np.eye(4)
    out[:3, :3] = m3
    return Matrix(out.tolist())


_SIZES = ("head_radius", "tail_radius", "envelope_distance", "bbone_x", "bbone_z")


def _edit_rest(view_layer: bpy.types.ViewLayer, arm: bpy.types.Object, s: F64, maps: dict[str, BoneMap]) -> None:
    """Rest bones times ``S``, in Edit Mode (the only place heads, tails and rolls are written)."""
    # Sizes are read and written on the bones in Object Mode: in Edit Mode a connected bone's head
    # radius is its parent's tail radius (written twice it would be scaled twice), and the round
    # trip gives it that value even where the bones disagreed (Object Mode writes keep what deforms).
    k = blender_scale(s)
    sizes = {b.name: {p: getattr(b, p) * k for p in _SIZES} for b in arm.data.bones}
    try:
        previous, previous_mode = enter_edit(view_layer, arm)
    except RuntimeError as exc:  # nothing is changed yet
        raise InputError(f"cannot enter Edit Mode on '{arm.name}' ({exc}); make it and its collection "
                         "visible, then fix") from exc
    try:
        # Read every bone first: writing a connected bone's head moves its parent's tail.
        rest = [(eb, s * _m(eb.head), s * _m(eb.tail), s * _m(eb.z_axis),
                 {p: getattr(eb, p) * maps[eb.name].axis_factor(p, 0) for p in (*CURVES, *ROLLS)})
                for eb in arm.data.edit_bones]
        for eb, head, tail, _, _ in rest:
            eb.head, eb.tail = Vector(head.tolist()), Vector(tail.tolist())
        for eb, _, _, z, values in rest:
            eb.align_roll(Vector(z.tolist()))
            for prop, value in values.items():
                setattr(eb, prop, value)
    finally:
        leave_edit(view_layer, previous, previous_mode)
    for bone in arm.data.bones:
        for prop, value in sizes[bone.name].items():
            setattr(bone, prop, value)


def apply_armature_scale(context: bpy.types.Context, arm: bpy.types.Object) -> tuple[str, int]:
    """Move ``arm``'s object scale into its rest pose, pose, keys and children; (message, bones changed)."""
    view_layer = context.view_layer
    view_layer.update()  # world matrices of this frame and pose, evaluated
    s = armature_basis_scale(arm)
    if np.array_equal(s, np.ones(3)):
        why = still_scaled(_m(arm.matrix_world))
        if why:
            raise InputError(f"'{arm.name}' has scale 1 and is {why}: {_still_scaled_why(arm)}")
        return f"'{arm.name}' has no object scale left to apply", 0
    _check(context, arm, s)
    maps = _bone_maps(arm, s)
    keys = _keyed_changes(arm, maps)
    baked = _mirrored_children(arm, s)
    children = list(arm.children)
    grandchildren = [g for b in baked for g in b.obj.children]
    _check_children([*children, *grandchildren])
    world_before = {c.name: c.matrix_world.copy() for c in [*children, *grandchildren]}

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

    # 3. Children: the same world matrix; mirrored meshes: the reflection in their data, the
    #    rest of the scale on the object (world = old world @ reflection, a proper matrix).
    plans = {b.obj.name: b for b in baked}
    kept, mirrored = [], []
    for c in children:
        if c.name in plans:
            _bake(plans[c.name])
            _keep_world(c, world_before[c.name] @ _m4(plans[c.name].reflection))
            mirrored.append(c.name)
        else:
            _keep_world(c, world_before[c.name])
            kept.append(c.name)
    view_layer.update()
    # Objects parented to a mesh whose matrix now leaves out the mirror: the same world matrix.
    for c in grandchildren:
        _keep_world(c, world_before[c.name])
    if grandchildren:
        view_layer.update()

    what = [f"applied scale {s.round(4).tolist()} of '{arm.name}' to its rest pose ({len(maps)} bones)"]
    if keys.scaled or keys.mixed:
        names = ", ".join(dict.fromkeys(f"'{a.name}'" for a, _ in played_actions(arm.animation_data)))
        what.append(f"{len(keys.scaled) + 3 * len(keys.mixed)} F-curves of {names} mapped")
    if kept:
        what.append(f"children kept their world transform ({', '.join(kept)})")
    if mirrored:
        what.append(f"the mirror went into the mesh data of {', '.join(mirrored)} (faces flipped)")
    if np.ptp(np.abs(s)) > tolerances.NON_UNIFORM_SCALE_RELATIVE * np.abs(s).max():
        what.append("rotated bones now turn rigidly (a non-uniform scale sheared them)")
    return "; ".join(what), len(maps)
