# SPDX-License-Identifier: GPL-3.0-or-later
"""``fix`` never costs a file: interrupted while Blender writes (SIGINT, SIGKILL), on a full disk,
with an output that aliases the input or a file it uses, on a read-only input, with nothing to fix.

Every rig is built in code: the fixable rig of tests/factories (three vertices off normalised)
saved as .blend and exported as .gltf, and a 250,000-vertex grid written byte by byte as .glb
(``gltf_files.skinned_grid_glb``) so Blender's exporter spends long enough writing to be
interrupted while it writes.  Each test compares the files on disk byte for byte with what
they held before.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.conftest import REPO, fill_disk, run_main

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

STAGING_PREFIX = ".skin_audit-"


@pytest.fixture(scope="module")
def rig_files(bpy, tmp_path_factory) -> Path:
    """broken.blend (weights-not-normalized on 3 vertices), clean.gltf + clean.bin (nothing to fix for
    that code: the exporter normalises), and grid.glb (250,000 vertices, 3 of them off normalised)."""
    from tests.factories.blender_rigs import fixable_rig
    from tests.hostile.gltf_files import skinned_grid_glb

    folder = tmp_path_factory.mktemp("fix_rigs")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    obj, _ = fixable_rig()
    for v in (5, 6, 50):
        for g in obj.data.vertices[v].groups:
            g.weight *= 0.8
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / "broken.blend"), copy=True)
    bpy.ops.export_scene.gltf(filepath=str(folder / "clean.gltf"), export_format="GLTF_SEPARATE")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    skinned_grid_glb(folder / "grid.glb", 500)
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(STAGING_PREFIX))


# 1. Interrupted while the exporter writes: the input byte for byte, nothing at the output path.

def _first_write(proc: subprocess.Popen, folder: Path, before: dict[str, tuple[int, int]]) -> bool:
    """Wait (at most 300 s) until a file under ``folder`` appears or changes: Blender started writing."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        for root, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if before.get(path) != (st.st_size, st.st_mtime_ns):
                    return True
    return False


@pytest.mark.parametrize("signum, in_place", [(signal.SIGINT, True), (signal.SIGKILL, True),
                                              (signal.SIGKILL, False)],
                         ids=["sigint-in-place", "sigkill-in-place", "sigkill-out"])
def test_a_fix_interrupted_while_blender_writes_leaves_the_input_and_no_output(rig_files, tmp_path, signum,
                                                                                in_place):
    work = tmp_path / "work"
    work.mkdir()
    source = work / "grid.glb"
    shutil.copy(rig_files / "grid.glb", source)
    original = source.read_bytes()
    out = work / "fixed.glb"
    before = {str(source): (source.stat().st_size, source.stat().st_mtime_ns)}
    where = ["--in-place"] if in_place else ["--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "skin_audit", "fix", str(source), "--code",
                             "weights-not-normalized", *where], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        writing = _first_write(proc, work, before)
        if writing:
            proc.send_signal(signum)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    stderr = err.decode(errors="replace")
    assert writing, f"the fix ended before Blender wrote (exit {proc.returncode}): {stderr[-2000:]}"
    assert source.read_bytes() == original  # byte for byte, whatever the moment of the signal
    assert _visible(work) == ["grid.glb"]  # nothing (half-)written at the output path
    if signum == signal.SIGINT:
        assert proc.returncode == 130, stderr[-3000:]
        assert "interrupted" in stderr
        assert sorted(os.listdir(work)) == ["grid.glb"]  # and the staging folder is gone
    else:
        assert proc.returncode == -signal.SIGKILL
        # A killed process cannot clean up: what it leaves is hidden staging, never a target.
        assert all(n.startswith(STAGING_PREFIX) for n in os.listdir(work) if n != "grid.glb")


# 1. A full disk: exit 2, the input byte for byte, nothing written, no staging left.

@pytest.mark.parametrize("name, out", [("broken.blend", "--in-place"), ("broken.blend", "fixed.blend"),
                                       ("broken.blend", "fixed.glb"), ("broken.blend", "fixed.gltf")])
def test_a_fix_on_a_full_disk_changes_nothing(rig_files, small_disk, empty_scene, name, out):
    source = small_disk / name
    shutil.copy(rig_files / name, source)
    fill_disk(small_disk)
    before = _snapshot(small_disk)
    where = ["--in-place"] if out == "--in-place" else ["--out", str(small_disk / out)]
    code, stdout, err = run_main("fix", source, "--code", "weights-not-normalized", *where)
    assert code == 2, stdout + err
    assert "No space left on device" in err or "incomplete" in err, err
    assert "nothing was replaced" in err
    assert _snapshot(small_disk) == before  # the input byte for byte; no output, no staging


# 2. An output that would write over the input or a file it uses is refused before any work.

def _refused(code: int, err: str, *names: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    for name in names:
        assert name in err, err


def test_a_hard_link_of_the_input_is_refused_as_the_input(rig_files, tmp_path, empty_scene):
    source = tmp_path / "broken.blend"
    shutil.copy(rig_files / "broken.blend", source)
    link = tmp_path / "link.blend"
    os.link(source, link)
    before = _snapshot(tmp_path)
    code, _, err = run_main("fix", source, "--code", "weights-not-normalized", "--out", link)
    _refused(code, err, "link.blend", "is the input", "hard link")
    assert _snapshot(tmp_path) == before


def _gltf_with_buffer(rig_files: Path, folder: Path, buffer: str) -> Path:
    """clean.gltf copied into ``folder`` as in.gltf, its buffer renamed ``buffer``."""
    doc = json.loads((rig_files / "clean.gltf").read_text(encoding="utf-8"))
    (uri,) = {b["uri"] for b in doc["buffers"]}
    doc["buffers"][0]["uri"] = buffer
    path = folder / "in.gltf"
    path.write_text(json.dumps(doc), encoding="utf-8")
    shutil.copy(rig_files / uri, folder / buffer)
    return path


def test_an_output_whose_buffer_is_the_inputs_buffer_is_refused(rig_files, tmp_path, empty_scene):
    # in.gltf reads data.bin; --out data.gltf would make Blender write data.bin over it.
    source = _gltf_with_buffer(rig_files, tmp_path, "data.bin")
    before = _snapshot(tmp_path)
    code, _, err = run_main("fix", source, "--code", "too-many-influences", "--out", tmp_path / "data.gltf")
    _refused(code, err, "data.bin", "the input uses")
    assert _snapshot(tmp_path) == before


def test_an_unrelated_bin_beside_the_output_is_refused(rig_files, tmp_path, empty_scene):
    source = _gltf_with_buffer(rig_files, tmp_path, "data.bin")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "x.bin").write_bytes(b"someone else's buffer")
    code, _, err = run_main("fix", source, "--code", "too-many-influences", "--out", other / "x.gltf")
    _refused(code, err, "x.bin", "is not one x.gltf uses")
    assert _snapshot(other) == {"x.bin": b"someone else's buffer"}


def test_an_output_over_a_linked_library_is_refused(bpy, rig_files, tmp_path, empty_scene):
    # main.blend links its rig from lib.blend; --out lib.blend would replace the library.
    shutil.copy(rig_files / "broken.blend", tmp_path / "lib.blend")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(str(tmp_path / "lib.blend"), link=True) as (src, dst):
        dst.objects = list(src.objects)
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "main.blend"), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    before = _snapshot(tmp_path)
    code, _, err = run_main("fix", tmp_path / "main.blend", "--code", "weights-not-normalized", "--out",
                            tmp_path / "lib.blend")
    _refused(code, err, "lib.blend", "the input uses")
    assert _snapshot(tmp_path) == before


def test_an_image_the_exporter_would_write_over_is_refused_and_nothing_is_written(bpy, tmp_path, empty_scene):
    # rig.blend's material reads tex.png beside it; glTF's exporter writes the texture as tex.png
    # beside --out x.gltf: known only once the exporter has named it, still refused before any move.
    from tests.factories.blender_rigs import fixable_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    obj, _ = fixable_rig()
    for g in obj.data.vertices[5].groups:
        g.weight *= 0.8
    image = bpy.data.images.new("tex", 4, 4)
    image.pixels = [0.25, 0.5, 0.75, 1.0] * 16
    image.filepath_raw = str(tmp_path / "tex.png")
    image.file_format = "PNG"
    image.save()
    material = bpy.data.materials.new("Skin")
    material.use_nodes = True
    node = material.node_tree.nodes.new("ShaderNodeTexImage")
    node.image = image
    material.node_tree.links.new(node.outputs["Color"], material.node_tree.nodes["Principled BSDF"].inputs[0])
    obj.data.materials.append(material)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "rig.blend"), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    (tmp_path / "tex.png").write_bytes((tmp_path / "tex.png").read_bytes() + b"the artist's own bytes")
    before = _snapshot(tmp_path)
    code, _, err = run_main("fix", tmp_path / "rig.blend", "--code", "weights-not-normalized", "--out",
                            tmp_path / "x.gltf")
    _refused(code, err, "tex.png", "the input uses")
    assert _snapshot(tmp_path) == before  # no x.gltf, no x.bin, tex.png byte for byte, no staging


# 3. --in-place on a read-only file is refused like a read-only report path.

def test_in_place_on_a_read_only_file_is_refused(rig_files, tmp_path, empty_scene):
    source = tmp_path / "broken.blend"
    shutil.copy(rig_files / "broken.blend", source)
    source.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        code, _, err = run_main("fix", source, "--code", "weights-not-normalized", "--in-place")
        _refused(code, err, "broken.blend", "read-only")
        assert source.read_bytes() == (rig_files / "broken.blend").read_bytes()
        assert sorted(os.listdir(tmp_path)) == ["broken.blend"]
    finally:
        source.chmod(stat.S_IRUSR | stat.S_IWUSR)


# 4. Nothing to fix: the file is left untouched, and the summary says so.

def test_a_fix_with_nothing_to_fix_leaves_the_file_untouched(rig_files, tmp_path, empty_scene):
    source = _gltf_with_buffer(rig_files, tmp_path, "in.bin")
    before = _snapshot(tmp_path)
    stamp = source.stat().st_mtime_ns
    code, out, err = run_main("fix", source, "--code", "weights-not-normalized", "--in-place")
    assert code == 0, out + err
    assert "weights-not-normalized 0 -> 0" in out
    assert "nothing to fix" in out and "nothing written" in out and "wrote" not in out
    assert _snapshot(tmp_path) == before and source.stat().st_mtime_ns == stamp


# The staged path still writes a whole .gltf set when it succeeds.

def test_a_fix_to_gltf_moves_the_gltf_and_its_bin_into_place_together(rig_files, tmp_path, empty_scene):
    source = tmp_path / "broken.blend"
    shutil.copy(rig_files / "broken.blend", source)
    code, out, err = run_main("fix", source, "--code", "weights-not-normalized", "--out", tmp_path / "fixed.gltf")
    assert code == 0, out + err
    assert sorted(os.listdir(tmp_path)) == ["broken.blend", "fixed.bin", "fixed.gltf"]
    doc = json.loads((tmp_path / "fixed.gltf").read_text(encoding="utf-8"))
    assert [b["uri"] for b in doc["buffers"]] == ["fixed.bin"]
    assert doc["buffers"][0]["byteLength"] == (tmp_path / "fixed.bin").stat().st_size
    assert "and beside it fixed.bin" in out
    # Run again over its own earlier output: fixed.bin belongs to fixed.gltf and is replaced with it.
    code, out, err = run_main("fix", source, "--code", "weights-not-normalized", "--out", tmp_path / "fixed.gltf")
    assert code == 0, out + err
