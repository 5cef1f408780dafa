# SPDX-License-Identifier: GPL-3.0-or-later
"""Audit files: .blend opened with scripts and Python drivers disabled,
glTF and FBX imported into an empty scene.  Nothing is ever saved."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import bpy

from ...core.audit.options import AuditOptions
from ...core.audit.report import AuditReport, FileAudit
from ...core.errors import InputError, SkinAuditError
from ...core.input_guard import GLTF_SUFFIXES, expand_paths
from ...core.version import __version__
from ..id_names import repair_names
from ..session import reset_to_empty_scene
from .audit_scene import audit_rigs, missing_modifiers, skinned_meshes
from .gltf_file import clip_document, gltf_audit, set_audited_frame
from .guarded import check_after_load, check_before_import, guarded_audit, read_error


@contextmanager
def importer_output_to_stderr() -> Iterator[None]:
    """Send what importers print (C and Python alike) to stderr, keeping stdout for the summary."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def load(path: Path) -> list[tuple[str, str]]:
    """Replace the session's data with ``path`` (scripts and Python drivers never run); return the
    (new name, kind) of what was renamed because its name was not valid UTF-8."""
    suffix = path.suffix.lower()
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable")
    check_before_import(path)
    try:
        with importer_output_to_stderr():
            if suffix == ".blend":
                bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False)
            elif suffix in GLTF_SUFFIXES:
                reset_to_empty_scene()
                bpy.ops.import_scene.gltf(filepath=str(path))
            else:
                reset_to_empty_scene()
                bpy.ops.import_scene.fbx(filepath=str(path))
    except RuntimeError as exc:
        missing = _UNSUPPORTED_EXTENSION.search(str(exc)) if suffix in GLTF_SUFFIXES else None
        if missing is not None:
            raise InputError(
                f"{path}: cannot be read: it requires {missing.group(1)}, which Blender's glTF importer does not "
                "decode (it decodes KHR_draco_mesh_compression, not meshopt), so there is nothing to audit; "
                "export it without mesh compression to audit it"
            ) from exc
        raise read_error(path, exc) from exc
    check_after_load(path)
    # Names that are not valid UTF-8 cannot be read through bpy: the loaded data takes them escaped.
    return repair_names() if suffix == ".blend" else []


#: Blender's glTF importer refusing a required extension (io_scene_gltf2 io/imp/gltf2_io_gltf.py, ``checks``).
_UNSUPPORTED_EXTENSION = re.compile(r"Extension (\S+) is not available on this addon version")

def leave_edit_modes() -> None:
    """Bring objects a file was saved in Edit Mode back to Object Mode (the file is never saved).

    A mesh in Edit Mode evaluates from its edit data and an armature in Edit
    Mode deforms nothing; Object Mode shows what the file holds.
    """
    view_layer = bpy.context.view_layer
    for obj in [o for o in view_layer.objects if o.mode != "OBJECT"]:
        view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="OBJECT")


def audit_file(path: Path, options: AuditOptions, object_name: str | None = None) -> FileAudit:
    """Load one file and audit every skinned mesh in it (or just ``object_name``)."""
    try:
        load(path)
        leave_edit_modes()
        set_audited_frame(path, options)
        objects = list(bpy.context.scene.objects)
        if object_name is not None:
            chosen = [o for o in objects if o.name == object_name]
            if not chosen:
                raise InputError(f"{path}: no object named '{object_name}'")
            meshes = skinned_meshes(chosen)
            missing = missing_modifiers([*chosen, *(o for o in objects if o.type == "ARMATURE")])
            if not meshes and not missing:
                raise InputError(f"{path}: '{object_name}' is not a mesh deformed by an Armature modifier")
        else:
            meshes = skinned_meshes(objects)
            missing = missing_modifiers(objects)
            if not meshes and not missing:
                raise InputError(f"{path}: not a rig: no mesh is deformed by an Armature modifier")
        gltf = path.suffix.lower() in GLTF_SUFFIXES
        clips = clip_document(path) if gltf and options.animation is not None else None
        rigs, audits = audit_rigs(bpy.context, meshes, options, missing=missing, gltf=clips)
        if gltf:
            rigs, audits = gltf_audit(path, options, rigs, audits)
        return FileAudit(str(path), "ok", meshes=audits, rigs=rigs)
    except SkinAuditError as exc:
        return FileAudit(str(path), "error", message=str(exc))


def audit_paths(
    paths: Iterable[str], options: AuditOptions, object_name: str | None = None,
    progress: Callable[[FileAudit], None] | None = None,
) -> tuple[FileAudit, ...]:
    """Audit every file; a bad file is reported and the run goes on."""
    results = []
    for path, problem in expand_paths(paths):
        result = FileAudit(str(path), "error", message=f"{path}: {problem}", error_kind="input") if problem \
            else guarded_audit(audit_file, path, options, object_name)
        results.append(result)
        if progress is not None:
            progress(result)
    return tuple(results)


def make_report(files: Iterable[FileAudit], options: AuditOptions) -> AuditReport:
    """The run's report: the one assembly the CLI and the panel's export share."""
    return AuditReport(__version__, bpy.app.version_string, options.to_dict(), tuple(files))
