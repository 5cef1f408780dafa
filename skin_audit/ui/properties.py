# SPDX-License-Identifier: GPL-3.0-or-later
"""The panel's settings, stored on the scene as ``Scene.skin_audit``.

The twist slider and the LBS/DQS switch act on the demo rig as soon as they
change (an update callback); everything else is read by the operators.
"""

from __future__ import annotations

import math

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty

from ..blender.build import twist_rig
from ..core.audit.options import AuditOptions
from ..core.engines.targets import TARGETS

_DEFAULTS = AuditOptions()

#: The engine targets (docs/engines.md), verified ones saying so.
TARGET_ITEMS = tuple(
    (t.name, t.name, f"{t.description} ({'verified against the running engine' if t.verified else 'modelled'})")
    for t in TARGETS.values())

METHOD_ITEMS = (
    ("LBS", "Linear Blend", "Linear blend skinning: the Armature modifier's Preserve Volume off"),
    ("DQS", "Dual Quaternion", "Dual quaternion skinning: the Armature modifier's Preserve Volume on"),
)


def _update_twist(self: SkinAuditSettings, _context: bpy.types.Context) -> None:
    rig = twist_rig.find_demo_rig(self.id_data)
    if rig is not None:
        twist_rig.set_twist(rig, math.degrees(self.twist_angle))


def _update_method(self: SkinAuditSettings, _context: bpy.types.Context) -> None:
    rig = twist_rig.find_demo_rig(self.id_data)
    if rig is not None:
        twist_rig.set_method(rig, self.method.lower())


class SkinAuditSettings(bpy.types.PropertyGroup):
    """Skin Audit settings of a scene."""

    twist_angle: FloatProperty(
        name="Twist",
        description="Twist of the demo rig's Child bone about its own axis (poses the rig live)",
        subtype="ANGLE",
        default=0.0,
        min=-2.0 * math.pi,
        max=2.0 * math.pi,
        update=_update_twist,
    )
    method: EnumProperty(
        name="Skinning",
        description="How the demo rig's Armature modifier blends the bones",
        items=METHOD_ITEMS,
        default="LBS",
        update=_update_method,
    )
    max_influences: IntProperty(
        name="Max Influences",
        description="Report vertices deformed by more bones than this",
        default=_DEFAULTS.max_influences,
        min=1,
        max=64,
    )
    weight_tolerance: FloatProperty(
        name="Weight Tolerance",
        description="Report vertices whose deform weights sum further than this from 1",
        default=float(_DEFAULTS.weight_tolerance),
        min=0.0,
        max=1.0,
        precision=6,
        step=0.001,
    )
    use_gltf_tolerance: BoolProperty(
        name="glTF Tolerance",
        description="Use glTF's rule instead: 2e-7 times the number of non-zero weights of each vertex",
        default=False,
    )
    target: EnumProperty(
        name="Engine",
        description="Engine target the audit and Preview in Engine compare with Blender (docs/engines.md)",
        items=TARGET_ITEMS,
        default=_DEFAULTS.target,
    )
    show_notes: BoolProperty(
        name="Show Notes",
        description="List the audit's INFO notes (facts about linear blend skinning, not data problems)",
        default=False,
    )
    play_actions: BoolProperty(
        name="Play Actions",
        description="Also play every action of the rig frame by frame and judge every frame (the animation "
                    "audit: collapse, volume and engine divergence per frame, and the keys themselves)",
        default=False,
    )
    test_pose_angle: FloatProperty(
        name="Test Pose",
        description="Bend and twist angle of the test poses the audit evaluates",
        subtype="ANGLE",
        default=math.radians(_DEFAULTS.test_pose_degrees),
        min=0.0,
        max=math.pi,
    )


def audit_options(settings: SkinAuditSettings) -> AuditOptions:
    """The settings as the audit's options."""
    return AuditOptions(
        max_influences=settings.max_influences,
        weight_tolerance="gltf" if settings.use_gltf_tolerance else settings.weight_tolerance,
        test_pose_degrees=math.degrees(settings.test_pose_angle),
        target=settings.target,
        animation=() if settings.play_actions else None,
    )


CLASSES = (SkinAuditSettings,)


def attach() -> None:
    """Add ``Scene.skin_audit`` (after the classes are registered)."""
    bpy.types.Scene.skin_audit = PointerProperty(type=SkinAuditSettings)


def detach() -> None:
    """Remove ``Scene.skin_audit`` (before the classes are unregistered)."""
    del bpy.types.Scene.skin_audit
