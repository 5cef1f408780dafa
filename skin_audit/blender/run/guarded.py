# SPDX-License-Identifier: GPL-3.0-or-later
"""One hostile file never costs the run: checks before and after loading, and the
guard around each file's audit.

- before an import: the input must be a regular file (a FIFO would block the importer);
  a binary FBX's record structure is walked (core/fbx_check.py) and a glTF file read by
  our reader (core/gltf/checks.check_before_import), so a corrupt body is refused in
  milliseconds instead of costing the importer tens of seconds and gigabytes;
- after an import: a SIGINT the importer swallowed is raised again, and a .blend
  whose linked libraries are missing is refused naming each library by path;
- a .blend this Blender refuses is named by the Blender that saved it when its header
  says that one is newer (core/blend_header.py);
- around the audit: any exception of ours becomes a one-line ``error`` entry
  marked ``internal`` (exit 3 at the end), the run goes on, and every number in
  the result is finite or null with a finding.
"""

from __future__ import annotations

import stat
import sys
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import bpy

from ...core.audit.finite import finite_file_audit
from ...core.audit.options import AuditOptions
from ...core.audit.report import FileAudit
from ...core.blend_header import newer_blender_message
from ...core.errors import InputError
from ...core.fbx_check import fbx_structure_problem
from ...core.gltf.checks import check_before_import as check_gltf_before_import
from ...core.gltf.document import GltfCompressedError, GltfError, load_gltf
from ...core.input_guard import GLTF_SUFFIXES, file_message, one_line
from ...core.interrupt import raise_if_interrupted


def check_before_import(path: Path) -> None:
    """Refuse a file whose structure would send the importer into unbounded work."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc
    if not stat.S_ISREG(mode):  # a FIFO would block the importer, a device never end
        raise InputError(f"{path}: not a regular file (a FIFO, a device or a folder); not imported")
    if path.suffix.lower() in GLTF_SUFFIXES:
        # The reader's structure checks first: a file they refuse costs a moment, not the importer's minutes.
        try:
            check_gltf_before_import(load_gltf(path))
        except GltfCompressedError:
            pass  # our reader cannot decode it; Blender's importer decodes Draco and names what it cannot
        except GltfError as exc:
            problem = str(exc).removeprefix(f"{path.name}: ")
            raise InputError(f"{path}: cannot be read, not imported: {problem}") from exc
    if path.suffix.lower() == ".fbx":
        try:
            problem = fbx_structure_problem(path)
        except (OSError, ValueError) as exc:
            problem = f"cannot be read ({exc})"
        if problem:
            raise InputError(f"{path}: corrupt FBX, not imported: {problem}")


def _library_path(lib: bpy.types.Library) -> str:
    return str(Path(bpy.path.abspath(lib.filepath, library=lib.library)).resolve())


def missing_libraries() -> dict[str, int]:
    """Linked libraries missing on disk, or no longer holding what the file links, that leave
    objects, meshes, armatures or collections as empty placeholders (what skinning is made of;
    a missing material or node tree library does not stop an audit): by absolute path, how many."""
    out: dict[str, int] = {}
    for coll in (bpy.data.objects, bpy.data.meshes, bpy.data.armatures, bpy.data.collections):
        for block in coll:
            if getattr(block, "is_missing", False) and block.library is not None:
                path = _library_path(block.library)
                out[path] = out.get(path, 0) + 1
    return out


def check_after_load(path: Path) -> None:
    """After a load: an interrupt an importer swallowed stops the run; missing libraries are named."""
    raise_if_interrupted()
    if path.suffix.lower() != ".blend":
        return
    missing = missing_libraries()
    if missing:
        listed = ", ".join(f"{lib} ({'file missing' if not Path(lib).is_file() else 'no longer holds them'}: "
                           f"{count} linked objects, meshes, armatures or collections)"
                           for lib, count in list(missing.items())[:3])
        raise InputError(f"{path}: linked librar{'y' if len(missing) == 1 else 'ies'} missing or incomplete: "
                         f"{listed}{' ...' if len(missing) > 3 else ''}; restore the library or make its data "
                         "local, then audit")


def zstd_decompressor() -> Callable[[bytes], bytes] | None:
    """The ``zstandard`` module Blender ships (and the bpy wheel requires) as a decoder of a
    stream's start, for the .blend headers the standard library cannot read; None without it."""
    try:
        import zstandard
    except ImportError:
        return None

    def decompress(data: bytes) -> bytes:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)

    return decompress


def read_error(path: Path, exc: BaseException) -> InputError:
    """The importer's error (often a whole traceback) as one line naming the file; for a .blend
    saved by a newer Blender than this one, which Blender that was."""
    raise_if_interrupted()
    if path.suffix.lower() == ".blend":
        newer = newer_blender_message(path, tuple(bpy.app.version), zstd_decompressor())
        if newer is not None:
            return InputError(file_message(path, f"cannot be read: {newer}"))
    return InputError(file_message(path, f"cannot be read ({one_line(str(exc))})"))


_memory_errors_fatal = False


def set_memory_errors_fatal(fatal: bool) -> None:
    """In a batch worker (True): a MemoryError leaves ``guarded_audit`` for the worker, which
    reports it against ``--file-memory-mb`` and stops (Blender after a failed allocation is not to
    be trusted).  Otherwise (the default) the file gets an 'input' error entry and the run goes on."""
    global _memory_errors_fatal
    _memory_errors_fatal = fatal


def guarded_audit(audit_file: Callable[[Path, AuditOptions, str | None], FileAudit], path: Path,
                  options: AuditOptions, object_name: str | None = None) -> FileAudit:
    """``audit_file`` that always returns: an ``ok`` entry with finite numbers, or an ``error``
    entry with one line naming the file (``error_kind`` 'internal' for a bug of ours)."""
    try:
        result = audit_file(path, options, object_name)
    except MemoryError:
        raise_if_interrupted()
        if _memory_errors_fatal:
            raise  # a batch worker: it reports the file against --file-memory-mb and is replaced
        return FileAudit(str(path), "error", error_kind="input", message=file_message(
            path, "out of memory: auditing this file needed more memory than this machine gave the process; "
                  "audit it on a larger machine"))
    except Exception as exc:  # a bug of ours on this file: report it, keep the other files
        raise_if_interrupted()
        sys.stderr.write(f"skin_audit: internal error on {path}:\n{traceback.format_exc()}")
        message = file_message(path, f"internal error (a skin_audit bug; please report it): "
                                     f"{type(exc).__name__}: {one_line(str(exc))}")
        return FileAudit(str(path), "error", message=message, error_kind="internal")
    raise_if_interrupted()
    if result.status != "ok":
        return replace(result, message=file_message(path, result.message or "cannot be audited"),
                       error_kind=result.error_kind or "input")
    return finite_file_audit(result)
