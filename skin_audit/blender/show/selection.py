# SPDX-License-Identifier: GPL-3.0-or-later
"""Select what a finding points at: vertices in Edit Mode, or bones in Pose Mode.

Selecting is a change the user asks for (one undo step): the target object
becomes the only selected and active object, and the mode changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import bmesh
import bpy
import numpy as np

from ...core.errors import InputError

#: Blender's stored selection of edges and faces (since Blender 3.4, in generic attributes).
SELECT_ATTRIBUTES = (".select_edge", ".select_poly")


def _focus(context: bpy.types.Context, obj: bpy.types.Object) -> None:
    """Leave any edit/pose mode, then make ``obj`` the only selected, active object."""
    view_layer = context.view_layer
    if obj.name not in view_layer.objects:
        raise InputError(f"{obj.name!r} is not in the view layer {view_layer.name!r}")
    if not obj.visible_get(view_layer=view_layer):
        raise InputError(f"{obj.name!r} is hidden: unhide it to select what the finding points at")
    if context.mode != "OBJECT" and view_layer.objects.active is not None:
        bpy.ops.object.mode_set(mode="OBJECT")
    for other in context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    view_layer.objects.active = obj


def select_vertices(context: bpy.types.Context, obj: bpy.types.Object, vertices: Sequence[int]) -> int:
    """Enter Edit Mode on ``obj`` with exactly ``vertices`` selected (vertex select mode).

    Returns the number of vertices selected.
    """
    if obj.type != "MESH":
        raise InputError(f"{obj.name!r} is not a mesh")
    mesh = obj.data
    idx = np.asarray(vertices, dtype=np.intp)
    if idx.size and (idx.min() < 0 or idx.max() >= len(mesh.vertices)):
        raise InputError(
            f"the finding names vertex {int(idx.max())} but {obj.name!r} has {len(mesh.vertices)}: "
            "the mesh changed since the audit; run the audit again"
        )
    _focus(context, obj)
    mask = np.zeros(len(mesh.vertices), dtype=bool)
    mask[idx] = True
    mesh.vertices.foreach_set("select", mask)
    # Edges and faces are deselected by removing their selection attributes (absent means
    # none selected), never through ``edges.foreach_set("select", ...)``: Blender 5.0.1
    # crashes on that for a mesh built by a script that was never in Edit Mode.
    for name in SELECT_ATTRIBUTES:
        attribute = mesh.attributes.get(name)
        if attribute is not None:
            mesh.attributes.remove(attribute)
    mesh.update()
    context.tool_settings.mesh_select_mode = (True, False, False)
    bpy.ops.object.mode_set(mode="EDIT")
    # As a click in vertex select mode does: an edge or face is selected when all its vertices are.
    bm = bmesh.from_edit_mesh(mesh)
    bm.select_mode = {"VERT"}
    bm.select_flush_mode()
    bmesh.update_edit_mesh(mesh, loop_triangles=False, destructive=False)
    return int(mask.sum())


def _set_bone_selected(pose_bone: bpy.types.PoseBone, selected: bool) -> None:
    # Blender 5.0 keeps pose selection on the pose bone; 4.2 on the bone.
    if "select" in pose_bone.bl_rna.properties:
        pose_bone.select = selected
    else:
        pose_bone.bone.select = selected


def select_bones(context: bpy.types.Context, armature: bpy.types.Object, names: Sequence[str]) -> int:
    """Enter Pose Mode on ``armature`` with exactly the bones ``names`` selected.

    Returns the number of bones selected.
    """
    if armature.type != "ARMATURE":
        raise InputError(f"{armature.name!r} is not an armature")
    wanted = set(names)
    missing = sorted(wanted.difference(armature.pose.bones.keys()))
    if missing:
        raise InputError(
            f"{armature.name!r} has no bone named {', '.join(map(repr, missing[:5]))}: "
            "the armature changed since the audit; run the audit again"
        )
    _focus(context, armature)
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in armature.pose.bones:
        _set_bone_selected(pose_bone, pose_bone.name in wanted)
    if names:
        armature.data.bones.active = armature.data.bones[names[0]]
    return len(wanted)
