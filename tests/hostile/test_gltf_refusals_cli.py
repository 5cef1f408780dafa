# SPDX-License-Identifier: GPL-3.0-or-later
"""Malformed glTF skins and accessors (tests/core/test_gltf_refusals.py) through
``python -m skin_audit audit`` with the real bpy: exit 2, each file named with its problem, no
traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.test_gltf_refusals import CASES, malformed

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.blender
def test_the_command_line_refuses_them_with_exit_2(tmp_path):
    """One run over a few of them (--html keeps it in one process): exit 2, each file named with its
    problem, no traceback."""
    names = ["joints FLOAT", "weights count 1 for 2 vertices", "skin joint past the nodes", "primitive a number",
             "translation a string"]
    paths = [malformed(tmp_path, n) for n in names]
    done = subprocess.run([sys.executable, "-m", "skin_audit", "audit", *map(str, paths), "--html",
                           str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json")], cwd=REPO,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 2, (done.stdout[-3000:], done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stdout + done.stderr
    files = json.loads((tmp_path / "r.json").read_text())["files"]
    assert [f["status"] for f in files] == ["error"] * len(names)
    assert [f["error_kind"] for f in files] == ["input"] * len(names)
    for f, path, name in zip(files, paths, names, strict=True):
        assert f["message"].startswith(f"{path}: cannot be read, not imported: {CASES[name][1]}"), f["message"]
