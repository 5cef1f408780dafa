# SPDX-License-Identifier: GPL-3.0-or-later
"""Write a set of output files all or nothing.

Everything is rendered to text first; files go to a hidden staging folder
inside each destination folder, are flushed to disk, and are moved into place
only when all are written.  What a move replaces is kept until the whole set is
in place, so a failure (a full disk, a read-only folder) or a Ctrl-C during the
moves puts every earlier file back byte for byte.  The same moves serve files
another program wrote into a staging folder (Blender's exporters, for ``fix``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import InputError

#: Prefix of the hidden staging folders and files (in the destination folder, so a move is a rename).
STAGING_PREFIX = ".skin_audit-"


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


def is_read_only(path: Path) -> bool:
    """True for an existing file without any write bit (root may write anywhere, yet the bits say "keep me")."""
    return path.is_file() and not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def refuse_read_only(target: Path, what: str = "it") -> None:
    if is_read_only(target):
        raise InputError(f"{str(target)!r} is read-only; {what} is not replaced (nothing was written). Make it "
                         "writable or write elsewhere")


def make_staging_dir(folder: Path) -> Path:
    """A new hidden folder inside ``folder`` (the same file system, so moving out of it is a rename)."""
    try:
        return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))
    except OSError as exc:
        raise InputError(f"cannot write in output folder {str(folder)!r}: {exc}") from exc


def sync_file(path: Path) -> None:
    """Flush ``path``'s data to the disk (a write error the writer missed shows up here)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a folder; the renames are still atomic
        pass
    finally:
        os.close(fd)


@contextmanager
def _sigint_deferred() -> Iterator[list[bool]]:
    """Within the block a Ctrl-C is recorded instead of raised (main thread only); the caller decides."""
    seen: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def record(signum: int, frame: object) -> None:
        seen.append(True)

    previous = signal.signal(signal.SIGINT, record)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def move_into_place(moves: Sequence[tuple[Path, Path]]) -> list[Path]:
    """Rename every staged ``(source, target)`` over its target, as one set; return the targets.

    Each source must be on the target's file system (a staging folder or file beside it).
    What a target held is kept (a hard link, or a copy) until the whole set is in place; an
    OSError or a Ctrl-C during the moves puts every target back as it was and raises
    (InputError, KeyboardInterrupt).  Moves run in the order given: put the file that
    references the others (a .gltf) last.
    """
    done: list[tuple[Path, Path | None]] = []  # (target, its kept previous content or None)

    def take_back() -> None:
        for target, kept in reversed(done):
            if kept is not None:
                os.replace(kept, target)
            else:
                target.unlink(missing_ok=True)

    with _sigint_deferred() as interrupted:
        try:
            for source, target in moves:
                kept = None
                if target.is_file():
                    kept = source.with_name(f".previous-{source.name}")
                    try:
                        os.link(target, kept)
                    except OSError:
                        shutil.copy2(target, kept)
                try:
                    os.replace(source, target)
                except BaseException:
                    if kept is not None:  # the target was not touched: drop its copy
                        kept.unlink(missing_ok=True)
                    raise
                done.append((target, kept))
            if interrupted:
                take_back()
        except KeyboardInterrupt:  # raised by the code itself, not the deferred signal
            take_back()
            raise
        except OSError as exc:
            take_back()
            raise InputError(f"cannot move the outputs into place ({exc}); every earlier file is as it was") \
                from exc
    if interrupted:
        raise KeyboardInterrupt
    for _, kept in done:
        if kept is not None:
            kept.unlink(missing_ok=True)
    for folder in {t.parent for t, _ in done}:
        _sync_folder(folder)
    return [t for t, _ in done]


def write_files(files: Mapping[Path, str]) -> list[Path]:
    """Write ``{path: text}`` (in one folder or several) atomically as a set; return the paths.

    Nothing is moved until every file is staged and flushed; a failure at any point leaves
    every destination as it was (earlier files byte for byte) and no staging folder behind.
    """
    targets = [Path(p) for p in files]
    for folder in dict.fromkeys(t.parent for t in targets):
        require_output_dir(folder)
    for target in targets:
        # A read-only file says "keep me": refused before anything is written (os.replace would not ask).
        refuse_read_only(target)
    staging: dict[Path, Path] = {}
    try:
        moves = []
        for target, text in zip(targets, files.values(), strict=True):
            if target.parent not in staging:
                staging[target.parent] = make_staging_dir(target.parent)
            staged = staging[target.parent] / target.name
            try:
                staged.write_text(text, encoding="utf-8")
                sync_file(staged)
            except OSError as exc:
                raise InputError(f"cannot write {str(target)!r} ({exc}); nothing was written, every earlier "
                                 "file is as it was") from exc
            moves.append((staged, target))
        return move_into_place(moves)
    finally:
        for folder in staging.values():
            shutil.rmtree(folder, ignore_errors=True)


def write_all(folder: str | os.PathLike[str], files: Mapping[str, str]) -> list[Path]:
    """Write ``{name: text}`` into ``folder`` atomically as a set; return the paths."""
    out = require_output_dir(folder)
    return write_files({out / name: text for name, text in files.items()})


def json_text(data: dict[str, Any]) -> str:
    """Strict JSON text (no NaN or Infinity literals); floats round-trip exactly (Python's repr).

    The one JSON writer: the twist scene, the audit report, the panel's export.
    """
    return json.dumps(data, indent=1, allow_nan=False) + "\n"
