# SPDX-License-Identifier: GPL-3.0-or-later
"""Guards between hostile input and the user's data: where a report may be written, and
turning any text (an importer's traceback) into one line that names the file.

Standard library only.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from .errors import InputError

#: glTF inputs, read by Blender's glTF importer: a VRM avatar (.vrm) is a glTF binary with VRM extensions.
GLTF_SUFFIXES = (".glb", ".gltf", ".vrm")
#: The file types ``audit`` reads (the Blender layer loads them; the report must never take their place).
INPUT_SUFFIXES = (".blend", *GLTF_SUFFIXES, ".fbx")

#: How long a one-line message may get before it is cut (a traceback's last line can be huge).
MAX_MESSAGE_CHARS = 300


def check_report_target(target: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]],
                        input_suffixes: Iterable[str], option: str = "--json") -> Path:
    """The resolved report path, or InputError when writing there could cost the user data.

    Refused: the report path is one of the input files (under any spelling: symlinks and
    ``..`` are resolved); it lies inside an input folder and ends in an input extension
    (a later run would take the report for a rig, or the report would replace one); it is
    an existing read-only file (replacing it would defeat the protection its owner set).
    """
    path = Path(target)
    resolved = path.resolve()
    suffixes = {s.lower() for s in input_suffixes}
    for raw in inputs:
        given = Path(raw).resolve()
        if given == resolved:
            raise InputError(f"{option} {str(path)!r} is one of the inputs; the report would replace it. "
                             "Give another file name for the report")
        if given.is_dir() and resolved.suffix.lower() in suffixes and given in resolved.parents:
            raise InputError(f"{option} {str(path)!r} lies inside the input folder {str(raw)!r} and ends in "
                             f"{resolved.suffix!r}, an input extension; name the report .json or write it "
                             "elsewhere")
    if resolved.is_dir():
        raise InputError(f"{option} {str(path)!r} is a folder; give a file name for the report")
    if resolved.exists():
        mode = resolved.stat().st_mode
        # The mode bits, not os.access: root may write anywhere, yet a read-only file says "keep me".
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(resolved, os.W_OK):
            raise InputError(f"{option} {str(path)!r} is read-only; it is not replaced. Make it writable "
                             "or give another file name")
    return resolved


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """The most telling line of ``text`` (a traceback's last non-empty line), cut to ``limit``."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if not lines:
        return ""
    # Blender wraps operator errors as "Error: Python: Traceback ... <last line>\nLocation: ...".
    useful = [line for line in lines if not line.startswith(("Location:", "File ", "^", "~"))]
    line = (useful or lines)[-1]
    for prefix in ("Error: Python: ", "Error: ", "RuntimeError: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def file_message(path: str | os.PathLike[str], problem: str) -> str:
    """``"<path>: <problem>"`` on one line, the path said once."""
    text = one_line(problem)
    name = str(path)
    return text if text.startswith(name) else f"{name}: {text}"


def expand_paths(paths: Iterable[str]) -> list[tuple[Path, str]]:
    """Files to audit: each path, or every supported file under a folder (sorted).

    Returns (path, problem) pairs; ``problem`` is empty for a file to audit.
    """
    out: list[tuple[Path, str]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in INPUT_SUFFIXES)
            if not found:
                out.append((p, f"folder has no {', '.join(INPUT_SUFFIXES)} file"))
            out += [(f, "") for f in found]
        elif not p.exists():
            out.append((p, "no such file or folder"))
        elif p.suffix.lower() not in INPUT_SUFFIXES:
            out.append((p, f"unsupported file type '{p.suffix}'; expected one of {', '.join(INPUT_SUFFIXES)}"))
        else:
            out.append((p, ""))
    return out
