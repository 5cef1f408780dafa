# SPDX-License-Identifier: GPL-3.0-or-later
"""Output files are written all or nothing, into a folder that must already exist."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skin_audit.core.errors import InputError
from skin_audit.core.output_files import require_output_dir, write_all

FILES = {
    "twist_scene.json": '{"format": "skin_audit.twist_scene"}\n',
    "twist_radii.csv": "method,angle_deg\nlbs,0\n",
    "twist_wireframe.svg": "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n",
    "summary.txt": "Verdict: \N{DEGREE SIGN} no findings\n",
}


def test_write_all_writes_every_file_and_nothing_else(tmp_path):
    written = write_all(tmp_path, FILES)
    assert written == [tmp_path / name for name in FILES]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)  # no staging folder left
    for name, text in FILES.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text


def test_write_all_replaces_existing_outputs(tmp_path):
    (tmp_path / "twist_radii.csv").write_text("old\n", encoding="utf-8")
    write_all(tmp_path, FILES)
    assert (tmp_path / "twist_radii.csv").read_text(encoding="utf-8") == FILES["twist_radii.csv"]


def test_missing_folder_is_an_input_error_and_is_not_created(tmp_path):
    missing = tmp_path / "does" / "not" / "exist"
    with pytest.raises(InputError, match="does not exist; create it first"):
        write_all(missing, FILES)
    assert not missing.exists() and not (tmp_path / "does").exists()


def test_a_file_given_as_folder_is_an_input_error(tmp_path):
    target = tmp_path / "plain_file"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="is not a folder"):
        require_output_dir(target)


def test_unwritable_folder_is_an_input_error(tmp_path, monkeypatch):
    # Simulated through os.access: a chmod would not stop root, who may run this suite.
    monkeypatch.setattr(os, "access", lambda path, mode: not (Path(path) == tmp_path and mode == os.W_OK))
    with pytest.raises(InputError, match="is not writable"):
        write_all(tmp_path, FILES)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_failure_on_the_third_file_leaves_nothing_behind(tmp_path, monkeypatch):
    (tmp_path / "unrelated.txt").write_text("keep me", encoding="utf-8")
    real_write_text = Path.write_text
    calls = []

    def failing_write_text(self, *args, **kwargs):
        calls.append(self.name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device (simulated)")
        return real_write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing_write_text)
    # An OS failure becomes the project's error (a clear CLI message, no traceback).
    with pytest.raises(InputError, match="simulated"):
        write_all(tmp_path, FILES)
    monkeypatch.undo()
    assert calls == list(FILES)[:3]
    # No partial outputs, no hidden staging folder: only what was there before.
    assert [p.name for p in tmp_path.iterdir()] == ["unrelated.txt"]
    assert (tmp_path / "unrelated.txt").read_text(encoding="utf-8") == "keep me"


def test_failure_while_moving_into_place_takes_back_the_moved_files(tmp_path, monkeypatch):
    import os

    real_replace = os.replace
    moves = []

    def failing_replace(src, dst):
        moves.append(Path(dst).name)
        if len(moves) == 2:
            raise OSError(5, "I/O error (simulated)")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(InputError, match="simulated"):
        write_all(tmp_path, FILES)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
