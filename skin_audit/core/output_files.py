# SPDX-License-Identifier: GPL-3.0-or-later
"""Write a set of output files all or nothing.

Everything is rendered to text first; files go to a hidden staging folder
inside the destination and are moved into place only when all are written,
so a failure leaves no half-written output behind.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError


def require_output_dir(path: str | os.PathLike[str]) -> Path:
    """The output folder, which must already exist and be writable."""
    out = Path(path)
    if not out.exists():
        raise InputError(f"output folder {str(out)!r} does not exist; create it first")
    if not out.is_dir():
        raise InputError(f"output path {str(out)!r} is not a folder")
    if not os.access(out, os.W_OK):
        raise InputError(f"output folder {str(out)!r} is not writable")
    return out


def write_all(folder: str | os.PathLike[str], files: Mapping[str, str]) -> list[Path]:
    """Write ``{name: text}`` into ``folder`` atomically as a set; return the paths."""
    out = require_output_dir(folder)
    for name in files:
        target = out / name
        # A read-only file says "keep me": refused before anything is written (os.replace would not ask).
        if target.is_file() and not target.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            raise InputError(f"{str(target)!r} is read-only; it is not replaced (nothing was written). Make it "
                             "writable or write elsewhere")
    try:
        staging = Path(tempfile.mkdtemp(prefix=".skin_audit-", dir=out))
    except OSError as exc:
        raise InputError(f"cannot write in output folder {str(out)!r}: {exc}") from exc
    written: list[Path] = []
    previous: dict[Path, Path] = {}
    try:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        for name in files:
            target = out / name
            if target.is_file():
                # Keep what is replaced until the whole set is in place: a failure or Ctrl-C puts it back.
                kept = staging / f".previous-{name}"
                try:
                    os.link(target, kept)
                except OSError:
                    shutil.copy2(target, kept)
                previous[target] = kept
            os.replace(staging / name, target)
            written.append(target)
        return written
    except (OSError, KeyboardInterrupt) as exc:
        # Take back what was already moved so no partial set is left, and restore what it replaced.
        for path in written:
            if path in previous:
                os.replace(previous[path], path)
            else:
                path.unlink(missing_ok=True)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise InputError(f"cannot write the outputs in {str(out)!r}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def json_text(data: dict[str, Any]) -> str:
    """Strict JSON text (no NaN or Infinity literals); floats round-trip exactly (Python's repr).

    The one JSON writer: the twist scene, the audit report, the panel's export.
    """
    return json.dumps(data, indent=1, allow_nan=False) + "\n"
