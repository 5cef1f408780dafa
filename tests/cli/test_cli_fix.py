# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit fix`` as a user runs it: a repaired copy that re-audits clean for the
fixed codes, the input byte for byte as it was, and outputs that would cost data refused."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

REPO = Path(__file__).resolve().parents[2]
FIXED = ("too-many-influences", "weights-not-normalized")


def skin_audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skin_audit", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def codes(report: Path) -> set[str]:
    data = json.loads(report.read_text())
    return {f["code"] for file in data["files"] for m in file["meshes"] for f in m["findings"]}


@pytest.fixture(scope="module")
def broken_blend(bpy, tmp_path_factory):
    """The fixable rig with three vertices off normalised, saved as a .blend."""
    from tests.factories.blender_rigs import fixable_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    obj, _ = fixable_rig()
    for v in (5, 6, 50):
        for g in obj.data.vertices[v].groups:
            g.weight *= 0.8
    path = tmp_path_factory.mktemp("fix") / "broken.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


def test_fix_writes_a_copy_that_reaudits_clean(broken_blend, tmp_path):
    before = tmp_path / "before.json"
    assert skin_audit("audit", str(broken_blend), "--no-shape-checks", "--json", str(before)).returncode in (0, 1)
    assert set(FIXED) <= codes(before)
    digest = sha(broken_blend)
    out = tmp_path / "new.blend"
    result = skin_audit("fix", str(broken_blend), "--code", FIXED[0], "--max-influences", "4", "--code", FIXED[1],
                        "--out", str(out))
    assert result.returncode == 0, result.stderr  # the re-audit has warnings only (Ghost, Prop)
    assert "too-many-influences 8 -> 0" in result.stdout and "weights-not-normalized 3 -> 0" in result.stdout
    assert f"wrote {out}" in result.stdout
    assert sha(broken_blend) == digest
    after = tmp_path / "after.json"
    skin_audit("audit", str(out), "--no-shape-checks", "--json", str(after))
    assert not set(FIXED) & codes(after)
    # Nothing else changed on the way.  engine-divergence stays, on 'Prop' alone: Blender's glTF
    # exporter also writes the weights of that bone with Deform off, which Blender ignores (the
    # crowded ring, where the engine kept 4 weights of Blender's 7, agrees once limited to 4).
    assert "engine-divergence" in codes(before)
    assert codes(after) == codes(before) - set(FIXED)
    (divergence,) = [f for file in json.loads(after.read_text())["files"] for m in file["meshes"]
                     for f in m["findings"] if f["code"] == "engine-divergence"]
    assert divergence["details"]["non_deform_groups"] == ["Prop"] and set(divergence["vertices"]) == {40, 41}


def test_fix_to_glb_through_blenders_exporter(broken_blend, tmp_path):
    out = tmp_path / "fixed.glb"
    result = skin_audit("fix", str(broken_blend), "--code", FIXED[0], "--out", str(out))
    assert result.returncode == 0, result.stderr
    report = tmp_path / "glb.json"
    skin_audit("audit", str(out), "--no-shape-checks", "--json", str(report))
    assert "too-many-influences" not in codes(report)


def test_fix_refuses_to_write_over_its_input(broken_blend, tmp_path):
    digest = sha(broken_blend)
    spelled = broken_blend.parent / ".." / broken_blend.parent.name / broken_blend.name
    for out in (broken_blend, spelled):
        result = skin_audit("fix", str(broken_blend), "--code", FIXED[0], "--out", str(out))
        assert result.returncode == 2
        assert "is the input" in result.stderr and "--in-place" in result.stderr
    result = skin_audit("fix", str(broken_blend), "--code", FIXED[0], "--out", str(tmp_path / "x.txt"))
    assert result.returncode == 2 and "expected a file ending in" in result.stderr
    readonly = tmp_path / "ro.blend"
    readonly.write_bytes(b"keep")
    readonly.chmod(0o444)
    result = skin_audit("fix", str(broken_blend), "--code", FIXED[0], "--out", str(readonly))
    assert result.returncode == 2 and "read-only" in result.stderr and readonly.read_bytes() == b"keep"
    assert sha(broken_blend) == digest


def test_in_place_writes_over_the_input(broken_blend, tmp_path):
    copy = tmp_path / "copy.blend"
    copy.write_bytes(broken_blend.read_bytes())
    result = skin_audit("fix", str(copy), "--code", FIXED[1], "--in-place")
    assert result.returncode == 0, result.stderr
    assert sha(copy) != sha(broken_blend)
    report = tmp_path / "r.json"
    skin_audit("audit", str(copy), "--no-shape-checks", "--json", str(report))
    assert "weights-not-normalized" not in codes(report)


@pytest.fixture(scope="module")
def mirrored_blend(bpy, tmp_path_factory):
    """tests/blender/test_fix_scale.py's rig, mirrored (-1.25, 1.25, 1.25), posed and keyed, as a .blend."""
    from tests.blender.test_fix_scale import pose, rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    _, arm = rig(bpy, (-1.25, 1.25, 1.25))
    pose(bpy, arm)
    path = tmp_path_factory.mktemp("fix_scale") / "mirrored.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


def _world_results(bpy, path: Path):
    """Blender's evaluated Body and Cap in world space, at frames 1 and 9, of the file at ``path``."""
    from tests.blender.test_fix_scale import evaluated

    bpy.ops.wm.open_mainfile(filepath=str(path))
    out = {}
    for frame in (1, 9):
        bpy.context.scene.frame_set(frame)
        out.update({(frame, n): evaluated(bpy, bpy.data.objects[n])[0] for n in ("Body", "Cap")})
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return out


def test_fix_negative_armature_scale_keeps_the_meshes_in_place(bpy, mirrored_blend, tmp_path):
    from tests.blender.test_fix_scale import SAME

    first = tmp_path / "before.json"
    skin_audit("audit", str(mirrored_blend), "--no-shape-checks", "--json", str(first))
    digest = sha(mirrored_blend)
    out = tmp_path / "unmirrored.blend"
    result = skin_audit("fix", str(mirrored_blend), "--code", "negative-armature-scale", "--out", str(out),
                        "--fail-on", "never")  # the rig keeps its other findings (a B-Bone's rest curve)
    assert result.returncode == 0, result.stderr
    assert "negative-armature-scale 1 -> 0" in result.stdout and "faces flipped" in result.stdout
    assert sha(mirrored_blend) == digest
    report = tmp_path / "after.json"
    skin_audit("audit", str(out), "--no-shape-checks", "--json", str(report))
    assert codes(report) == codes(first) - {"negative-armature-scale"}
    before, after = _world_results(bpy, mirrored_blend), _world_results(bpy, out)
    for key, points in before.items():
        assert np.abs(after[key] - points).max() < SAME, key


def glb_windings(path: Path) -> dict[str, tuple[int, int]]:
    """Per mesh of a .glb: (triangles wound with their stored normals, triangles wound against them),
    read from the file's own buffers (what an engine draws; a skinned mesh's node transform is ignored)."""
    import struct

    data = path.read_bytes()
    size = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + size])
    blob = data[20 + size + 8:]

    def accessor(i: int) -> np.ndarray:
        a = doc["accessors"][i]
        view = doc["bufferViews"][a["bufferView"]]
        dtype = {5126: np.float32, 5125: np.uint32, 5123: np.uint16, 5121: np.uint8}[a["componentType"]]
        width = {"SCALAR": 1, "VEC3": 3}[a["type"]]
        flat = np.frombuffer(blob, dtype=dtype, count=a["count"] * width,
                             offset=view.get("byteOffset", 0) + a.get("byteOffset", 0))
        return flat.reshape(a["count"], width).astype(np.float64)

    out = {}
    for mesh in doc["meshes"]:
        for prim in mesh["primitives"]:
            pos, nor = accessor(prim["attributes"]["POSITION"]), accessor(prim["attributes"]["NORMAL"])
            tri = accessor(prim["indices"]).astype(np.intp).reshape(-1, 3)
            wound = np.cross(pos[tri[:, 1]] - pos[tri[:, 0]], pos[tri[:, 2]] - pos[tri[:, 0]])
            dot = np.einsum("ij,ij->i", wound, nor[tri].mean(axis=1))
            out[mesh["name"]] = (int((dot > 0).sum()), int((dot < 0).sum()))
    return out


def test_fix_negative_armature_scale_exports_outward_faces(bpy, mirrored_blend, tmp_path):
    """Blender's glTF exporter bakes a mirrored mesh into the file without flipping its faces:
    exported as it is, the mirrored rig is inside out; the fixed copy is not."""
    from skin_audit.blender.fix.files import save_copy

    bpy.ops.wm.open_mainfile(filepath=str(mirrored_blend))
    save_copy(tmp_path / "as_is.glb")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert glb_windings(tmp_path / "as_is.glb")["Body"] == (0, 128)
    out = tmp_path / "fixed.glb"
    result = skin_audit("fix", str(mirrored_blend), "--code", "negative-armature-scale", "--out", str(out),
                        "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert glb_windings(out)["Body"] == (128, 0)


def test_fix_armature_scale_refuses_what_it_cannot_carry_and_writes_nothing(bpy, tmp_path):
    """A rig with an IK constraint (its pole angle turns the chain 0.69 units otherwise): the
    command names it, exits as unusable and writes no output; the input is untouched."""
    from skin_audit.cli import EXIT_UNUSABLE
    from tests.blender.test_fix_scale import pose, rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    _, arm = rig(bpy, (-1.25, 1.25, 1.25))
    pose(bpy, arm)
    goal = bpy.data.objects.new("Goal", None)
    bpy.context.scene.collection.objects.link(goal)
    arm.pose.bones["Top"].constraints.new("IK").target = goal
    path = tmp_path / "with_ik.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    digest, out = sha(path), tmp_path / "fixed.blend"
    result = skin_audit("fix", str(path), "--code", "negative-armature-scale", "--out", str(out))
    assert result.returncode == EXIT_UNUSABLE, result.stdout + result.stderr
    assert "constraint 'IK' on bone 'Top'" in result.stderr
    assert not out.exists() and sha(path) == digest
