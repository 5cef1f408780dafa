# SPDX-License-Identifier: GPL-3.0-or-later
"""The manifest, and the zip that scripts/build_extension.py builds with Blender's own tool."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from skin_audit import __version__

ROOT = Path(__file__).resolve().parent.parent.parent
BUILD_SCRIPT = ROOT / "scripts" / "build_extension.py"
#: blender_ext.py's limit for the tagline and each permission's reason.
SHORT_TEXT = 64


def _build_module():
    spec = importlib.util.spec_from_file_location("build_extension", BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(root: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BUILD_SCRIPT), "--root", str(root), "--output-dir", str(out)],
                          capture_output=True, text=True, timeout=120)


def test_manifest_declares_the_extension():
    """Id, version, oldest Blender, licence and the files permission, within Blender's limits."""
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
    assert manifest["id"] == "skin_audit"
    assert manifest["type"] == "add-on"
    assert manifest["version"] == __version__
    assert manifest["blender_version_min"] == "4.2.0"
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"]
    texts = {"tagline": manifest["tagline"], "permissions.files": manifest["permissions"]["files"]}
    for key, text in texts.items():
        assert len(text) <= SHORT_TEXT, f"{key} is {len(text)} characters; Blender allows {SHORT_TEXT}"
        assert not text.endswith((".", "!", "?")), f"{key} must not end with punctuation"


@pytest.mark.blender
@pytest.mark.blender42
def test_zip_holds_the_package_and_nothing_else(extension_zip):
    """Manifest and package at the top of the zip; no tests, scripts, caches or hidden files."""
    with zipfile.ZipFile(extension_zip) as archive:
        names = set(archive.namelist())
        manifest = tomllib.loads(archive.read("blender_manifest.toml").decode("utf-8"))
    for required in ("blender_manifest.toml", "LICENSE", "__init__.py", "cli.py", "ui/__init__.py",
                     "ui/panels.py", "blender_command.py", "blender/show/heatmap.py", "core/audit/report.py"):
        assert required in names, required
    # Every module of the package, and no test-only builder (those live in tests/factories).
    package = Path(__file__).resolve().parents[2] / "skin_audit"
    shipped = {p.relative_to(package).as_posix() for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    assert len(shipped) > 40
    assert {n for n in names if n.endswith(".py")} == shipped
    assert manifest["id"] == "skin_audit"
    unwanted = [n for n in names if n.startswith(("tests/", "scripts/")) or "__pycache__" in n
                or n.endswith(".pyc") or any(part.startswith(".") for part in n.split("/"))]
    assert unwanted == []
    assert not any(n.endswith(".whl") for n in names), "no bundled wheels: Blender ships numpy"


@pytest.mark.blender
@pytest.mark.blender42
def test_zip_passes_blenders_validation(extension_zip):
    tool = _build_module().find_blender_ext()
    proc = subprocess.run([sys.executable, str(tool), "validate", str(extension_zip), "--output-type", "JSON"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    messages = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert messages and messages[-1][0] == "STATUS" and "Success" in messages[-1][1], messages


@pytest.mark.blender
@pytest.mark.blender42
def test_build_fails_on_a_bad_manifest(tmp_path):
    """Blender's tool rejects the manifest: the script exits non-zero, says why, writes no zip."""
    shutil.copy(ROOT / "LICENSE", tmp_path / "LICENSE")
    shutil.copytree(ROOT / "skin_audit", tmp_path / "skin_audit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    manifest = (ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    lines = [f'tagline = "{"x" * 80}"' if line.startswith("tagline") else line for line in manifest.splitlines()]
    (tmp_path / "blender_manifest.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = _build(tmp_path, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "tagline" in proc.stderr
    assert list(out.glob("*.zip")) == []


@pytest.mark.blender
@pytest.mark.blender42
def test_build_fails_without_the_package(tmp_path):
    shutil.copy(ROOT / "LICENSE", tmp_path / "LICENSE")
    shutil.copy(ROOT / "blender_manifest.toml", tmp_path / "blender_manifest.toml")
    proc = _build(tmp_path, tmp_path / "out")
    assert proc.returncode == 1
    assert "not a Python package" in proc.stderr
