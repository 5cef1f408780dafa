# SPDX-License-Identifier: GPL-3.0-or-later
"""Hostile .blend files built in code with the real ``bpy``; each function saves one file.

Every builder starts from an empty factory scene and leaves one behind.  The
rigs are small (a 5 x 8 cylinder on two bones) so a folder of all of them
audits in seconds.
"""

from __future__ import annotations

import math
from pathlib import Path

import bpy
import numpy as np

from tests.factories.blender_rigs import BoneSpec, build_armature, build_rig, chain_rig


def _fresh() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)


def _save(path: Path) -> Path:
    bpy.context.view_layer.update()
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    _fresh()
    return path


def good_blend(path: Path) -> Path:
    """A clean rig: the control every hostile file is measured against."""
    _fresh()
    chain_rig("Good")
    return _save(path)


def zero_bone_blend(path: Path) -> Path:
    """An Armature modifier pointing at an armature with no bones at all."""
    _fresh()
    arm = build_armature("Empty_Armature", [])
    me = bpy.data.meshes.new("Lonely")
    me.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    obj = bpy.data.objects.new("Lonely", me)
    bpy.context.scene.collection.objects.link(obj)
    obj.vertex_groups.new(name="Bone").add([0, 1, 2], 1.0, "REPLACE")
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    return _save(path)


def zero_scale_blend(path: Path) -> Path:
    """The armature object scaled to 0: its matrix is singular."""
    _fresh()
    _, arm = chain_rig("Flat")
    arm.scale = (0.0, 0.0, 0.0)
    return _save(path)


def huge_scale_blend(path: Path) -> Path:
    """The armature object scaled by 1e20: float32 cannot keep the mesh in place."""
    _fresh()
    _, arm = chain_rig("Huge")
    arm.scale = (1e20, 1e20, 1e20)
    return _save(path)


def preserve_volume_zero_scale_blend(path: Path) -> Path:
    """Preserve Volume with a pose bone scaled to 0: a dual quaternion of a singular matrix."""
    _fresh()
    _, arm = chain_rig("Squashed", use_deform_preserve_volume=True)
    arm.pose.bones["Child"].scale = (0.0, 0.0, 0.0)
    return _save(path)


def nan_vertex_blend(path: Path) -> Path:
    """A mesh with a NaN vertex position."""
    _fresh()
    obj, _ = chain_rig("NanVertex")
    co = np.zeros(len(obj.data.vertices) * 3, dtype=np.float32)
    obj.data.vertices.foreach_get("co", co)
    co[3 * 5] = np.nan
    obj.data.vertices.foreach_set("co", co)
    obj.data.update()
    return _save(path)


def nan_pose_blend(path: Path) -> Path:
    """A pose bone whose location is NaN."""
    _fresh()
    _, arm = chain_rig("NanPose")
    arm.pose.bones["Child"].location = (math.nan, 0.0, 0.0)
    return _save(path)


def two_modifiers_blend(path: Path) -> Path:
    """Two Armature modifiers on the same armature (no Multi Modifier): the second deforms the first's output."""
    _fresh()
    obj, arm = chain_rig("Twice")
    second = obj.modifiers.new("Armature.001", "ARMATURE")
    second.object = arm
    arm.pose.bones["Child"].rotation_mode = "XYZ"
    arm.pose.bones["Child"].rotation_euler = (0.4, 0.0, 0.0)
    return _save(path)


def bbone_drift_blend(path: Path) -> Path:
    """B-Bone segments with a curved rest shape: vertices move at Rest Position."""
    _fresh()
    bones = [BoneSpec("Root", (0, 0, 0), (0, 0, 1), bbone_segments=4),
             BoneSpec("Child", (0, 0, 1), (0, 0, 2), "Root", bbone_segments=4, use_connect=True)]
    from tests.factories.blender_rigs import chain_weights, cylinder
    verts, faces = cylinder()
    obj, arm = build_rig("Bendy", bones, verts, faces, chain_weights(verts[:, 2], ("Root", "Child")))
    for pb in arm.pose.bones:
        pb.bbone_curveinx = 0.5
        pb.bbone_curveoutx = -0.5
        pb.bbone_easein = 1.0
    return _save(path)


def missing_library_blend(folder: Path) -> tuple[Path, Path]:
    """A file that links its rig from a library, then the library is deleted.

    Returns (the main file, the library path it names).
    """
    library = folder / "rig_library.blend"
    good_blend(library)
    _fresh()
    with bpy.data.libraries.load(str(library), link=True) as (src, dst):
        dst.objects = list(src.objects)
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    main = _save(folder / "uses_missing_library.blend")
    library.unlink()
    return main, library


def incomplete_library_blend(folder: Path) -> tuple[Path, Path]:
    """A file linking a rig from a library that still exists but no longer holds the rig.

    Returns (the main file, the library path it names).
    """
    library = folder / "renamed_library.blend"
    good_blend(library)
    _fresh()
    with bpy.data.libraries.load(str(library), link=True) as (src, dst):
        dst.objects = list(src.objects)
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    main = _save(folder / "uses_incomplete_library.blend")
    bpy.ops.wm.open_mainfile(filepath=str(library), load_ui=False)
    for obj in list(bpy.data.objects):
        obj.name = "Renamed_" + obj.name
    bpy.ops.wm.save_mainfile()
    _fresh()
    return main, library
