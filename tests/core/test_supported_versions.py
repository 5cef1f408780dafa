# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender versions the extension claims are the ones the tests run on: the manifest's
range, the bpy pins of the requirement files, and the venvs scripts/test.sh runs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: venv of scripts/setup_env.sh -> its requirement file.
VENVS = {".venv": "requirements-dev.txt", ".venv42": "requirements-blender42.txt",
         ".venv45": "requirements-blender45.txt", ".venv52": "requirements-blender52.txt"}


def _pin(requirements: str, package: str) -> tuple[int, ...]:
    text = (ROOT / requirements).read_text(encoding="utf-8")
    found = re.search(rf"^{package}==([\d.]+)", text, re.MULTILINE)
    assert found, f"{requirements} pins no {package}"
    return tuple(int(x) for x in found.group(1).split("."))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def test_the_tested_blenders():
    """4.2 LTS (the oldest claimed), 4.5 LTS, 5.0 and 5.2 LTS, each with the numpy it ships."""
    assert {venv: _pin(req, "bpy")[:2] for venv, req in VENVS.items()} == {
        ".venv": (5, 0), ".venv42": (4, 2), ".venv45": (4, 5), ".venv52": (5, 2)}
    assert {venv: _pin(req, "numpy")[0] for venv, req in VENVS.items()} == {
        ".venv": 1, ".venv42": 1, ".venv45": 1, ".venv52": 2}


def test_manifest_range_is_the_tested_range():
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
    pins = [_pin(req, "bpy") for req in VENVS.values()]
    oldest, newest = min(pins), max(pins)
    assert _version(manifest["blender_version_min"]) == oldest
    # blender_version_max is exclusive: the newest tested minor version is still claimed, the next is not.
    assert _version(manifest["blender_version_max"]) == (newest[0], newest[1] + 1, 0)


def test_every_venv_is_made_and_run():
    setup = (ROOT / "scripts" / "setup_env.sh").read_text(encoding="utf-8")
    test = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    for venv, requirements in VENVS.items():
        assert f"make_venv {venv} {requirements}" in setup
        assert f"{venv}/bin/python -m pytest" in test
