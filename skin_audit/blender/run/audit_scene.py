# SPDX-License-Identifier: GPL-3.0-or-later
"""Audit skinned meshes of the open Blender file without changing it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import bpy

from ...core.audit.mesh_audit import audit_skinned_mesh
from ...core.audit.options import AuditOptions
from ...core.audit.report import MeshAudit
from ...core.errors import InputError
from ..read.extract import extract
from ..read.pose_check import spot_checker


def armature_modifiers(obj: bpy.types.Object) -> list[bpy.types.ArmatureModifier]:
    """The object's Armature modifiers that deform it in the viewport and have an armature set."""
    if obj.type != "MESH":
        return []
    return [m for m in obj.modifiers
            if m.type == "ARMATURE" and m.show_viewport and m.object is not None and m.object.type == "ARMATURE"]


def skinned_meshes(objects: Iterable[bpy.types.Object]) -> list[bpy.types.Object]:
    """The mesh objects among ``objects`` that an Armature modifier deforms."""
    return [o for o in objects if armature_modifiers(o)]


def meshes_for_context(context: bpy.types.Context) -> list[bpy.types.Object]:
    """The active mesh if it is skinned, or every mesh the active armature deforms."""
    active = context.active_object
    if active is None:
        return []
    if active.type == "ARMATURE":
        return [o for o in skinned_meshes(context.scene.objects)
                if any(m.object == active for m in armature_modifiers(o))]
    return skinned_meshes([active])


def audit_meshes(
    context: bpy.types.Context,
    mesh_objects: Iterable[bpy.types.Object],
    options: AuditOptions,
    progress: Callable[[int, int], None] | None = None,
    allow_edit_mode: bool = False,
) -> tuple[MeshAudit, ...]:
    """One MeshAudit per (mesh, Armature modifier); the scene is left untouched.

    A mesh in Edit Mode is refused unless ``allow_edit_mode``: its mesh data
    lags behind the edits.  A file just opened in Edit Mode holds its saved
    data, so file audits allow it.
    """
    objects = list(mesh_objects)
    for obj in objects:
        if obj.mode == "EDIT" and not allow_edit_mode:
            raise InputError(f"'{obj.name}' is in Edit Mode; leave it so its weights are stored, then audit")
        if not armature_modifiers(obj):
            raise InputError(f"'{obj.name}' is not deformed by an Armature modifier with an armature set")
        for mod in armature_modifiers(obj):
            if mod.object.mode == "EDIT" and not allow_edit_mode:
                raise InputError(f"armature '{mod.object.name}' is in Edit Mode, where it deforms nothing; "
                                 "leave Edit Mode, then audit")
    depsgraph = context.evaluated_depsgraph_get()
    results = []
    pairs = [(o, m) for o in objects for m in armature_modifiers(o)]
    for k, (obj, mod) in enumerate(pairs):
        if progress is not None:
            progress(k, len(pairs))
        results.append(audit_skinned_mesh(extract(obj, mod, depsgraph), options, spot_checker(obj, mod)))
    return tuple(results)
