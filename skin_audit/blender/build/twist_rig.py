# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the twist experiment's rig in a Blender scene, and pose it.

The cylinder, a two-bone armature on its axis (Root at the bottom, Child
above it), vertex groups named after the bones with weights linear in height,
and an Armature modifier.  Building again replaces the previous demo rig.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import bpy
import numpy as np

from ...core.twist.cylinder import build_cylinder, linear_height_weights
from .objects import BoneSpec, add_weights, build_armature, mesh_from_arrays

MESH_NAME = "SkinAudit_Cylinder"
ARMATURE_NAME = "SkinAudit_Armature"
MODIFIER_NAME = "Armature"
ROOT_BONE = "Root"
CHILD_BONE = "Child"
#: Custom property that marks objects this module built.
MARKER = "skin_audit_demo"


@dataclass(frozen=True)
class DemoRig:
    mesh: bpy.types.Object
    armature: bpy.types.Object

    @property
    def modifier(self) -> bpy.types.ArmatureModifier:
        return self.mesh.modifiers[MODIFIER_NAME]


def find_demo_rig(scene: bpy.types.Scene | None = None) -> DemoRig | None:
    """The demo rig in ``scene`` (or anywhere when None), if one was built."""
    objects = scene.objects if scene is not None else bpy.data.objects
    mesh = next((o for o in objects if o.get(MARKER) == "mesh" and o.type == "MESH"), None)
    arm = next((o for o in objects if o.get(MARKER) == "armature" and o.type == "ARMATURE"), None)
    if mesh is None or arm is None or MODIFIER_NAME not in mesh.modifiers:
        return None
    return DemoRig(mesh, arm)


def remove_demo_rig() -> None:
    """Delete every object (and its data) that a previous build left."""
    for obj in [o for o in bpy.data.objects if o.get(MARKER)]:
        data = obj.data
        bpy.data.objects.remove(obj, do_unlink=True)
        if data is not None and data.users == 0:
            if isinstance(data, bpy.types.Mesh):
                bpy.data.meshes.remove(data)
            elif isinstance(data, bpy.types.Armature):
                bpy.data.armatures.remove(data)


def _build_armature(collection: bpy.types.Collection, view_layer: bpy.types.ViewLayer) -> bpy.types.Object:
    arm = build_armature(ARMATURE_NAME, (
        BoneSpec(ROOT_BONE, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
        BoneSpec(CHILD_BONE, (0.0, 0.0, 1.0), (0.0, 0.0, 2.0), parent=ROOT_BONE, use_connect=True),
    ), collection, view_layer)
    arm[MARKER] = "armature"
    return arm


def _build_mesh(collection: bpy.types.Collection, arm: bpy.types.Object) -> bpy.types.Object:
    cyl = build_cylinder()
    obj = bpy.data.objects.new(MESH_NAME, mesh_from_arrays(MESH_NAME, cyl.vertices, cyl.triangles))
    obj[MARKER] = "mesh"
    collection.objects.link(obj)
    _, weights = linear_height_weights(cyl.vertices, cyl.height)
    # Zero weights are not stored: the bottom ring is in Root's group only, the top in Child's.
    add_weights(obj, {bone: (np.flatnonzero(weights[:, slot] > 0.0), weights[weights[:, slot] > 0.0, slot])
                      for slot, bone in enumerate((ROOT_BONE, CHILD_BONE))})
    obj.parent = arm
    mod = obj.modifiers.new(MODIFIER_NAME, "ARMATURE")
    mod.object = arm
    mod.use_vertex_groups = True
    mod.use_bone_envelopes = False
    return obj


def build_demo_rig(context: bpy.types.Context | None = None) -> DemoRig:
    """Build (or rebuild) the twist rig in the context's scene collection. Object mode only."""
    context = context or bpy.context
    remove_demo_rig()
    collection = context.scene.collection
    arm = _build_armature(collection, context.view_layer)
    mesh = _build_mesh(collection, arm)
    context.view_layer.update()
    return DemoRig(mesh, arm)


def twist_quaternion(angle_deg: float) -> tuple[float, float, float, float]:
    """Rotation about the bone's own Y axis (the cylinder axis) as (w, x, y, z)."""
    half = math.radians(angle_deg) / 2.0
    return (math.cos(half), 0.0, math.sin(half), 0.0)


def set_twist(rig: DemoRig, angle_deg: float) -> None:
    """Twist the child bone about its own axis by ``angle_deg``."""
    pb = rig.armature.pose.bones[CHILD_BONE]
    pb.rotation_mode = "QUATERNION"
    pb.rotation_quaternion = twist_quaternion(angle_deg)


def set_method(rig: DemoRig, method: str) -> None:
    """'dqs' turns on the modifier's Preserve Volume, 'lbs' turns it off."""
    rig.modifier.use_deform_preserve_volume = method == "dqs"
