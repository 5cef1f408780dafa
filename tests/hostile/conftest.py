# SPDX-License-Identifier: GPL-3.0-or-later
"""The hostile files, built once per session in a tmp folder, and the report checks every test shares."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "docs" / "report.schema.json"

#: The hostile .blend builders (tests/hostile/blend_files.py), by file stem.
BLEND_BUILDERS = ("good", "zero_bone", "zero_scale", "huge_scale", "preserve_volume_zero_scale", "nan_vertex",
                  "nan_pose", "two_modifiers", "bbone_drift")


@pytest.fixture(scope="session")
def hostile_dir(tmp_path_factory, bpy) -> Path:
    """Every hostile rig in one folder (a missing-library pair under ``lib/``)."""
    from tests.hostile import blend_files, gltf_files

    folder = tmp_path_factory.mktemp("hostile")
    for stem in BLEND_BUILDERS:
        getattr(blend_files, f"{stem}_blend")(folder / f"{stem}.blend")
    (folder / "lib").mkdir()
    blend_files.missing_library_blend(folder / "lib")
    gltf_files.nan_ibm_gltf(folder / "nan_ibm.gltf")
    gltf_files.bad_joints_gltf(folder / "bad_joints.gltf")
    gltf_files.random_body_fbx(folder / "random_body.fbx")
    (folder / "truncated.glb").write_bytes(b"glTF\x02\x00\x00\x00")
    (folder / "not_a_blend.blend").write_text("hello", encoding="utf-8")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return folder


@pytest.fixture
def hostile(hostile_dir, tmp_path) -> Path:
    """A private copy of the hostile folder (a test may write into it)."""
    return Path(shutil.copytree(hostile_dir, tmp_path / "hostile"))


def run_main(*args: str | Path) -> tuple[int, str, str]:
    """The command line in this process (bpy already loaded): (exit code, stdout, stderr)."""
    from skin_audit.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in args], out, err)
    return code, out.getvalue(), err.getvalue()


def strict_report(path: Path) -> dict:
    """Read a report as strict JSON (NaN or Infinity literals fail) and validate it against the schema."""
    import jsonschema

    def no_constants(name: str) -> None:
        raise AssertionError(f"{path}: non-standard JSON literal {name}")

    report = json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constants)
    jsonschema.validate(report, json.loads(SCHEMA.read_text(encoding="utf-8")))
    return report


def files_by_name(report: dict) -> dict[str, dict]:
    return {Path(f["path"]).name: f for f in report["files"]}


def mesh_findings(file_entry: dict) -> list[dict]:
    return [x for m in file_entry["meshes"] for x in m["findings"]]


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs mounted for the test (root only; skipped elsewhere), unmounted after it."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True,
                          timeout=30, check=False)
    if done.returncode != 0:
        pytest.skip(f"a small tmpfs needs root: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30, check=False)


def fill_disk(folder: Path) -> None:
    """Write a filler file in ``folder`` until its file system has no byte left."""
    import errno

    with open(folder / "filler", "wb", buffering=0) as handle:
        for size in (65536, 4096, 512, 64, 1):  # down to the last partial page
            for _ in range(1 << 16):  # bounded: the disk is 1 MiB
                try:
                    handle.write(b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
