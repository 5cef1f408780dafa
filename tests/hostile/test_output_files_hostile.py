# SPDX-License-Identifier: GPL-3.0-or-later
"""All-or-nothing writes under hostile conditions (core, no bpy): a read-only file in the set,
and Ctrl-C while the set is being moved into place."""

from __future__ import annotations

import os
import stat

import pytest

from skin_audit.core import output_files
from skin_audit.core.errors import InputError
from skin_audit.core.output_files import write_all


def test_a_read_only_file_in_the_set_refuses_the_whole_set(tmp_path):
    (tmp_path / "a.json").write_text("old a", encoding="utf-8")
    locked = tmp_path / "b.json"
    locked.write_text("old b", encoding="utf-8")
    locked.chmod(stat.S_IRUSR)
    try:
        with pytest.raises(InputError, match="read-only"):
            write_all(tmp_path, {"a.json": "new a", "b.json": "new b"})
        assert (tmp_path / "a.json").read_text(encoding="utf-8") == "old a"
        assert locked.read_text(encoding="utf-8") == "old b"
    finally:
        locked.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]


def test_ctrl_c_while_moving_the_set_restores_what_was_replaced(tmp_path, monkeypatch):
    (tmp_path / "a.json").write_text("old a", encoding="utf-8")
    real = os.replace
    moved = []

    def interrupting(src, dst):
        if moved and str(dst).endswith("b.json"):
            raise KeyboardInterrupt
        real(src, dst)
        moved.append(dst)

    monkeypatch.setattr(output_files.os, "replace", interrupting)
    with pytest.raises(KeyboardInterrupt):
        write_all(tmp_path, {"a.json": "new a", "b.json": "new b"})
    monkeypatch.setattr(output_files.os, "replace", real)
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == "old a"
    assert sorted(os.listdir(tmp_path)) == ["a.json"]  # no b.json, no staging folder


def test_a_set_across_folders_that_fails_in_the_second_restores_the_first(tmp_path, monkeypatch):
    # --json A/audit.json --sarif B/x.sarif: B fails after A/audit.json was replaced; A's earlier report
    # comes back byte for byte (it used to be deleted).
    from skin_audit.core.output_files import write_files

    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    (a / "audit.json").write_bytes(b"earlier A")
    (b / "x.sarif").write_bytes(b"earlier B")
    real = os.replace

    def failing(src, dst):
        if str(dst) == str(b / "x.sarif"):
            raise OSError(28, "No space left on device (simulated)")
        real(src, dst)

    monkeypatch.setattr(output_files.os, "replace", failing)
    with pytest.raises(InputError, match="simulated"):
        write_files({a / "audit.json": "new A", b / "x.sarif": "new B"})
    monkeypatch.setattr(output_files.os, "replace", real)
    assert (a / "audit.json").read_bytes() == b"earlier A"
    assert (b / "x.sarif").read_bytes() == b"earlier B"
    assert sorted(os.listdir(a)) == ["audit.json"] and sorted(os.listdir(b)) == ["x.sarif"]


def test_a_real_ctrl_c_during_the_moves_puts_the_whole_set_back(tmp_path, monkeypatch):
    # The signal arrives between two renames: the set is finished, then taken back whole, then
    # the interrupt is raised (exit 130 means nothing was written).
    import signal

    from skin_audit.core.output_files import write_files

    (tmp_path / "a.json").write_bytes(b"earlier a")
    real = os.replace

    def interrupted_after_first(src, dst):
        real(src, dst)
        if str(dst).endswith("a.json"):
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(output_files.os, "replace", interrupted_after_first)
    with pytest.raises(KeyboardInterrupt):
        write_files({tmp_path / "a.json": "new a", tmp_path / "b.json": "new b"})
    monkeypatch.setattr(output_files.os, "replace", real)
    assert (tmp_path / "a.json").read_bytes() == b"earlier a"
    assert sorted(os.listdir(tmp_path)) == ["a.json"]
