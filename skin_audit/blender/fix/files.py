# SPDX-License-Identifier: GPL-3.0-or-later
"""Fix a file headless: open it as the audit does (scripts and drivers off), fix each
skinned mesh, write a repaired copy (.blend, or glTF through Blender's exporter).

The input is never written unless ``in_place``; the output is checked before any work.
What Blender writes (a .blend, a .glb, or a .gltf with its .bin and images) goes to a
hidden staging place in the output folder first, is checked whole and flushed to disk,
and is then renamed over the targets as one set (``core.output_files.move_into_place``):
an interrupted or failed fix leaves the input and every earlier output byte for byte.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import bpy

from ...core.audit.options import AuditOptions
from ...core.errors import InputError
from ...core.input_guard import check_report_target, one_line
from ...core.interrupt import raise_if_interrupted
from ...core.output_files import (
    STAGING_PREFIX,
    is_read_only,
    make_staging_dir,
    move_into_place,
    refuse_read_only,
    require_output_dir,
    sync_file,
)
from ...core.text import printable
from ..run.audit_files import importer_output_to_stderr, leave_edit_modes, load
from ..run.audit_scene import audit_meshes, skinned_meshes
from .apply import SHAPE_CHECK_CODES, FixOutcome, FixSettings, fix_mesh

#: What a repaired copy may be written as.
OUTPUT_SUFFIXES = (".blend", ".glb", ".gltf")

#: Largest glTF JSON read to learn which files it uses (a bigger one is not a glTF we wrote or can fix).
MAX_JSON_BYTES = 256 * 1024 * 1024


def _gltf_json(path: Path) -> dict | None:
    """The JSON of a .gltf or .glb file, or None when it cannot be read as one."""
    try:
        with open(path, "rb") as handle:
            if path.suffix.lower() == ".glb":
                head = handle.read(20)
                if len(head) < 20 or head[:4] != b"glTF" or head[16:20] != b"JSON":
                    return None
                (length,) = struct.unpack("<I", head[12:16])
                if length > min(MAX_JSON_BYTES, os.fstat(handle.fileno()).st_size):
                    return None
                raw = handle.read(length)
            else:
                raw = handle.read(MAX_JSON_BYTES + 1)
                if len(raw) > MAX_JSON_BYTES:
                    return None
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def gltf_uses(path: Path) -> list[Path]:
    """The files a .gltf/.glb names by relative uri (buffers and images), resolved; [] if unreadable."""
    data = _gltf_json(path)
    if data is None:
        return []
    out = []
    for key in ("buffers", "images"):
        items = data.get(key)
        for item in items if isinstance(items, list) else []:
            uri = item.get("uri") if isinstance(item, dict) else None
            if isinstance(uri, str) and uri and not uri.startswith("data:") and "://" not in uri:
                out.append((path.parent / unquote(uri)).resolve())
    return out


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` are one file: one path under two spellings, or two hard links."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@dataclass(frozen=True)
class FixTarget:
    """Where a fix writes, and the files it must never write over."""

    #: The repaired copy (the input itself for ``--in-place``).
    path: Path
    in_place: bool
    #: The input and the files it uses (buffers, images, linked libraries), resolved.
    used: tuple[Path, ...]


def _owned(target: Path) -> set[Path]:
    """Files the existing ``target`` glTF uses: replacing them with its new ones is replacing it."""
    return set(gltf_uses(target)) if target.suffix.lower() in (".gltf", ".glb") and target.is_file() else set()


def check_output_file(dest: Path, target: FixTarget, option: str) -> None:
    """InputError when writing ``dest`` as part of ``target`` could cost a file the user has."""
    if not target.in_place:
        for used in target.used:
            if _same_file(dest, used):
                what = ("is the input under another name (a symlink, '..' or a hard link)" if used == target.used[0]
                        else f"the input uses ({str(used)!r}: a buffer, an image or a linked library)")
                raise InputError(f"{option}: Blender would write {str(dest)!r}, which {what}; a fix never writes "
                                 "over its input or the files it uses unless --in-place is given. Give another "
                                 "file name or folder")
    if dest.exists() and not _same_file(dest, target.path) and dest.resolve() not in _owned(target.path):
        raise InputError(f"{option}: Blender would write {str(dest)!r} beside {str(target.path)!r}, and that "
                         f"file is not one {target.path.name} uses; it is not replaced. Move it or give "
                         "another file name")
    if is_read_only(dest):
        raise InputError(f"{str(dest)!r} is read-only; it is not replaced. Make it writable or write elsewhere")


def fix_target(path: str | os.PathLike[str], out: str | os.PathLike[str] | None, in_place: bool) -> FixTarget:
    """Where the fix writes, or InputError before any work when writing there could cost data."""
    source = Path(path).resolve()
    if not source.is_file():
        raise InputError(f"{path}: no such file")
    used = (source, *gltf_uses(source)) if source.suffix.lower() in (".gltf", ".glb") else (source,)
    if in_place:
        if out is not None and Path(out).resolve() != source:
            raise InputError("--in-place writes over the input; give either --in-place or --out, not both")
        if source.suffix.lower() not in OUTPUT_SUFFIXES:
            raise InputError(f"{path}: a {source.suffix} file cannot be written in place; give --out FIXED.blend")
        if not os.access(source, os.W_OK) or is_read_only(source):
            raise InputError(f"{path} is read-only; --in-place does not replace it (nothing was written). "
                             "Make it writable or give --out FIXED")
        require_output_dir(source.parent)
        target = FixTarget(source, True, used)
        option = "--in-place"
    else:
        if out is None:
            raise InputError("give --out FIXED.blend (or .glb/.gltf) for the repaired copy, or --in-place")
        resolved = Path(out).resolve()
        if resolved == source:
            raise InputError(f"--out {str(out)!r} is the input; a fix never writes over its input unless "
                             "--in-place is given. Give another file name")
        if resolved.suffix.lower() not in OUTPUT_SUFFIXES:
            raise InputError(f"--out {str(out)!r}: expected a file ending in {', '.join(OUTPUT_SUFFIXES)}")
        # The audit's report guards: an input under any spelling, a folder, a read-only file.
        check_report_target(out, [path], OUTPUT_SUFFIXES, "--out")
        require_output_dir(resolved.parent)
        target = FixTarget(resolved, False, used)
        option = f"--out {str(out)!r}"
    for dest in predicted_outputs(target.path):
        check_output_file(dest, target, option)
    return target


def predicted_outputs(path: Path) -> list[Path]:
    """The files Blender writes for ``path`` that can be known before the export: the file, and a
    .gltf's buffer (``X.bin``; images are checked once the exporter has named them)."""
    return [path, path.with_suffix(".bin")] if path.suffix.lower() == ".gltf" else [path]


def check_loaded_files(target: FixTarget, extra: Iterable[str]) -> FixTarget:
    """The target again with what the loaded file uses (linked libraries, images), checked before any fix."""
    used = tuple(dict.fromkeys([*target.used, *(Path(p).resolve() for p in extra if p)]))
    checked = FixTarget(target.path, target.in_place, used)
    option = "--in-place" if target.in_place else f"--out {str(target.path)!r}"
    for dest in predicted_outputs(target.path):
        check_output_file(dest, checked, option)
    return checked


@dataclass(frozen=True)
class FileFix:
    """The fixes applied to one file and the codes of its meshes after them."""

    path: str
    #: Where the repaired copy went ('' when nothing changed and nothing was written).
    out: str
    outcomes: tuple[FixOutcome, ...]
    after: tuple[tuple[str, str, str], ...]  # (object, code, severity) of every finding after the fixes
    #: Every file written, the repaired copy last.
    written: tuple[str, ...] = ()


def _check_whole(staged: Path, files: Sequence[Path]) -> None:
    """InputError unless the staged main file is complete (an exporter that missed a write error)."""
    size = staged.stat().st_size
    suffix = staged.suffix.lower()
    if suffix == ".glb":
        with open(staged, "rb") as handle:
            head = handle.read(12)
        complete = len(head) == 12 and head[:4] == b"glTF" and struct.unpack("<I", head[8:12])[0] == size
    elif suffix == ".gltf":
        data = _gltf_json(staged)
        complete = data is not None
        for buffer in (data or {}).get("buffers", []):
            uri, length = buffer.get("uri", ""), buffer.get("byteLength", 0)
            if isinstance(uri, str) and uri and not uri.startswith("data:"):
                part = staged.parent / unquote(uri)
                complete = complete and part in files and part.stat().st_size >= length
    else:
        with open(staged, "rb") as handle:
            head = handle.read(7)
        complete = head == b"BLENDER" or head[:4] == b"\x28\xb5\x2f\xfd"  # plain or zstd-compressed .blend
    if not complete:
        raise InputError(f"Blender wrote an incomplete {staged.name} ({size} bytes); nothing was replaced")


def _export(staged: Path) -> None:
    suffix = staged.suffix.lower()
    with importer_output_to_stderr():
        if suffix == ".blend":
            bpy.ops.wm.save_as_mainfile(filepath=str(staged), copy=True, check_existing=False)
        else:
            bpy.ops.export_scene.gltf(filepath=str(staged),
                                      export_format="GLB" if suffix == ".glb" else "GLTF_SEPARATE")


def save_copy(target: FixTarget | Path) -> list[Path]:
    """Write the open file as ``target.path`` (or a plain path) through staging; return every file
    written (the copy last).

    Blender writes into a hidden staging folder (a .blend: a hidden file) in the target's
    folder; the result is checked whole, flushed to disk, every file it would replace is
    checked again, and only then are they renamed into place together.  Any failure or
    Ctrl-C on the way removes the staging and leaves every existing file as it was.
    """
    if not isinstance(target, FixTarget):
        target = FixTarget(Path(target).resolve(), False, ())
    final = target.path
    folder = final.parent
    blend = final.suffix.lower() == ".blend"
    # A .blend beside the target, not in a subfolder: its relative paths are remapped for this folder.
    staging = folder if blend else make_staging_dir(folder)
    staged = folder / f"{STAGING_PREFIX}{secrets.token_hex(4)}-{final.name}" if blend else staging / final.name
    try:
        try:
            _export(staged)
        except RuntimeError as exc:
            raise_if_interrupted()  # the exporter caught a Ctrl-C
            raise InputError(f"cannot write {str(final)!r}: {one_line(str(exc))}; nothing was replaced") from exc
        raise_if_interrupted()
        files = [staged] if blend else sorted(p for p in staging.rglob("*") if p.is_file())
        if staged not in files:
            raise InputError(f"Blender wrote no {final.name}; nothing was replaced")
        try:
            _check_whole(staged, files)
            for f in files:
                sync_file(f)
        except OSError as exc:
            raise InputError(f"cannot write {str(final)!r} ({exc}); nothing was replaced") from exc
        option = "--in-place" if target.in_place else f"--out {str(final)!r}"
        moves = []
        for f in files:
            dest = final if f == staged else folder / f.relative_to(staging)
            if dest != final:
                check_output_file(dest, target, option)
                refuse_read_only(dest)
                dest.parent.mkdir(parents=True, exist_ok=True)
            moves.append((f, dest))
        moves.sort(key=lambda m: m[1] == final)  # the file naming the others goes last
        return move_into_place(moves)
    finally:
        if blend:
            staged.unlink(missing_ok=True)
            Path(f"{staged}@").unlink(missing_ok=True)  # Blender's own temporary file beside it
        else:
            shutil.rmtree(staging, ignore_errors=True)


def _used_by_loaded_file() -> list[str]:
    """Every external file the loaded data names (linked libraries, images, sounds...), absolute."""
    return [str(p) for p in bpy.utils.blend_paths(absolute=True, packed=True)]


def fix_file(path: str, codes: Sequence[str], target: FixTarget, settings: FixSettings | None = None,
             object_name: str | None = None) -> FileFix:
    """Open ``path``, fix ``codes`` on every skinned mesh (or ``object_name``), save to ``target``
    unless nothing changed (then the input and the target are left as they are)."""
    settings = settings or FixSettings()
    source = Path(path)
    renamed = load(source)
    if renamed:
        names = ", ".join(f"{kind} '{name}'" for name, kind in renamed[:3]) + (" ..." if len(renamed) > 3 else "")
        raise InputError(f"{path}: names that are not valid UTF-8 ({names}, shown with their bytes escaped); "
                         "a fix changes only what its finding names, so rename them in Blender first")
    target = check_loaded_files(target, _used_by_loaded_file())  # before any change
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
    if not any(o.changed_cells for o in outcomes):
        return FileFix(str(source), "", tuple(outcomes), after)
    written = save_copy(target)
    return FileFix(str(source), str(target.path), tuple(outcomes), after, tuple(str(p) for p in written))


def summary_text(result: FileFix) -> str:
    """Per mesh and code: the finding count before and after, what was done; then where it went."""
    lines = [f"fix {result.path}"]
    for o in result.outcomes:
        lines.append(f"  {o.object}: {o.code} {o.before.get(o.code, 0)} -> {o.after.get(o.code, 0)}"
                     f" ({o.message})")
    codes = sorted({c for _, c, _ in result.after})
    lines.append(f"  re-audit: {len(result.after)} findings" + (f" ({', '.join(codes)})" if codes else ""))
    if result.out:
        beside = [Path(w).name for w in result.written if w != result.out]
        lines.append(f"wrote {result.out}" + (f" (and beside it {', '.join(beside)})" if beside else ""))
    else:
        lines.append(f"nothing to fix: {result.path} left as it was, nothing written")
    return "".join(printable(line) + "\n" for line in lines)
