# SPDX-License-Identifier: GPL-3.0-or-later
"""Fix a file headless: open it as the audit does (scripts and drivers off), fix each
skinned mesh, write a repaired copy (.blend, or glTF through Blender's exporter).

The input is never written unless ``in_place``; the output is checked before any work.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bpy

from ...core.audit.options import AuditOptions
from ...core.errors import InputError
from ...core.input_guard import check_report_target
from ...core.output_files import require_output_dir
from ..run.audit_files import importer_output_to_stderr, leave_edit_modes, load
from ..run.audit_scene import audit_meshes, skinned_meshes
from .apply import SHAPE_CHECK_CODES, FixOutcome, FixSettings, fix_mesh

#: What a repaired copy may be written as.
OUTPUT_SUFFIXES = (".blend", ".glb", ".gltf")


def fix_target(path: str | os.PathLike[str], out: str | os.PathLike[str] | None, in_place: bool) -> Path:
    """The resolved output path, or InputError before any work when writing there could cost data."""
    source = Path(path).resolve()
    if not source.is_file():
        raise InputError(f"{path}: no such file")
    if in_place:
        if out is not None and Path(out).resolve() != source:
            raise InputError("--in-place writes over the input; give either --in-place or --out, not both")
        if source.suffix.lower() not in OUTPUT_SUFFIXES:
            raise InputError(f"{path}: a {source.suffix} file cannot be written in place; give --out FIXED.blend")
        return source
    if out is None:
        raise InputError("give --out FIXED.blend (or .glb/.gltf) for the repaired copy, or --in-place")
    target = Path(out).resolve()
    if target == source:
        raise InputError(f"--out {str(out)!r} is the input; a fix never writes over its input unless "
                         "--in-place is given. Give another file name")
    if target.suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(f"--out {str(out)!r}: expected a file ending in {', '.join(OUTPUT_SUFFIXES)}")
    # The audit's report guards: an input under any spelling, a folder, a read-only file.
    check_report_target(out, [path], OUTPUT_SUFFIXES, "--out")
    require_output_dir(target.parent)
    return target


@dataclass(frozen=True)
class FileFix:
    """The fixes applied to one file and the codes of its meshes after them."""

    path: str
    out: str
    outcomes: tuple[FixOutcome, ...]
    after: tuple[tuple[str, str, str], ...]  # (object, code, severity) of every finding after the fixes


def save_copy(target: Path) -> None:
    """Write the open file to ``target``: a .blend copy, or glTF through Blender's exporter."""
    suffix = target.suffix.lower()
    with importer_output_to_stderr():
        if suffix == ".blend":
            bpy.ops.wm.save_as_mainfile(filepath=str(target), copy=True, check_existing=False)
        else:
            bpy.ops.export_scene.gltf(filepath=str(target),
                                      export_format="GLB" if suffix == ".glb" else "GLTF_SEPARATE")


def fix_file(path: str, codes: Sequence[str], target: Path, settings: FixSettings | None = None,
             object_name: str | None = None) -> FileFix:
    """Open ``path``, fix ``codes`` on every skinned mesh (or ``object_name``), save to ``target``."""
    settings = settings or FixSettings()
    source = Path(path)
    load(source)
    leave_edit_modes()
    objects = list(bpy.context.scene.objects)
    if object_name is not None:
        objects = [o for o in objects if o.name == object_name]
        if not objects:
            raise InputError(f"{path}: no object named '{object_name}'")
    meshes = skinned_meshes(objects)
    if not meshes:
        what = f"'{object_name}' is not" if object_name else "no mesh is"
        raise InputError(f"{path}: {what} a mesh deformed by an Armature modifier; nothing to fix")
    options = AuditOptions(shape_checks=bool(SHAPE_CHECK_CODES.intersection(codes)),
                           max_influences=settings.max_influences)
    outcomes = [o for obj in meshes for o in fix_mesh(bpy.context, obj, codes, settings, options)]
    after = tuple((a.object, f.code, f.severity) for a in audit_meshes(bpy.context, meshes, options)
                  for f in a.findings)
    save_copy(target)
    return FileFix(str(source), str(target), tuple(outcomes), after)


def summary_text(result: FileFix) -> str:
    """Per mesh and code: the finding count before and after, what was done; then where it went."""
    lines = [f"fix {result.path}"]
    for o in result.outcomes:
        lines.append(f"  {o.object}: {o.code} {o.before.get(o.code, 0)} -> {o.after.get(o.code, 0)}"
                     f" ({o.message})")
    codes = sorted({c for _, c, _ in result.after})
    lines.append(f"  re-audit: {len(result.after)} findings" + (f" ({', '.join(codes)})" if codes else ""))
    lines.append(f"wrote {result.out}")
    return "\n".join(lines) + "\n"
