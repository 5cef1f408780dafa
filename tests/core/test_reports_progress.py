# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress on stderr: quiet unless a terminal; files done, current file and time left."""

from __future__ import annotations

import io

from skin_audit.core.reports.progress import Progress, file_sizes


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def run(stream, weights=None, enabled=None):
    clock = Clock()
    p = Progress(3, stream, enabled=enabled, weights=weights, clock=clock)
    for name, seconds in (("a.blend", 10.0), ("b.blend", 10.0), ("c.blend", 20.0)):
        p.start(name)
        clock.t += seconds
        p.done(ok=name != "b.blend")
    p.finish()
    return p


def test_quiet_when_not_a_terminal():
    stream = io.StringIO()
    run(stream)
    assert stream.getvalue() == ""


def test_terminal_shows_files_current_file_time_left_and_a_summary():
    stream = Tty()
    run(stream, weights=[1, 1, 2])
    frames = stream.getvalue().split("\r")[1:]
    assert frames[0].startswith("skin_audit: 0/3 files: a.blend")
    # After a (weight 1) in 10 s, 3 weight units are left: 30 s.
    assert frames[1].startswith("skin_audit: 1/3 files, about 30 s left: b.blend")
    assert frames[2].startswith("skin_audit: 2/3 files, about 20 s left: c.blend")
    assert frames[3] == "skin_audit: 3 file(s) audited in 40 s, 1 could not be audited\n"


def test_equal_weights_and_file_sizes(tmp_path):
    stream = Tty()
    p = run(stream)
    assert "1/3 files, about 20 s left" in stream.getvalue()
    assert p.summary().endswith("40 s, 1 could not be audited")
    (tmp_path / "x").write_bytes(b"12345")
    assert file_sizes([str(tmp_path / "x"), str(tmp_path / "missing")]) == [5, 0]
