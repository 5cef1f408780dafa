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
