# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit`` as a user runs it: a subprocess with this venv's Python.

Usage errors need no Blender. The full demo (it needs the ``bpy`` module) runs
once per module; its files are judged against closed forms computed here and
then fed, untouched and tampered with, to ``skin_audit verify``.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
OUTPUTS = {"twist_scene.json", "twist_radii.csv", "twist_wireframe.svg", "twist_summary.txt"}
ANGLES = (0.0, 90.0, 120.0, 180.0)
METHODS = ("lbs", "dqs")
RINGS, SEGMENTS, HEIGHT = 9, 24, 2.0
SVG = "{http://www.w3.org/2000/svg}"


def skin_audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skin_audit", *args],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )


def expected_ratio(method: str, w: float, theta: float) -> float:
    """r'/r of a ring with child weight w: LBS sqrt(1 - 4 w (1-w) sin^2(theta/2)), DQS 1."""
    if method == "dqs":
        return 1.0
    return math.sqrt(max(0.0, 1.0 - 4.0 * w * (1.0 - w) * math.sin(theta / 2.0) ** 2))


# ------------------------------------------------------------ usage errors


def test_help_exits_0():
    result = skin_audit("--help")
    assert result.returncode == 0, result.stderr
    assert "demo" in result.stdout and "verify" in result.stdout


def test_demo_without_out_fails_with_a_message():
    result = skin_audit("demo")
    assert result.returncode != 0
    assert "--out" in result.stderr


def test_missing_output_folder_exits_2_and_creates_nothing(tmp_path):
    missing = tmp_path / "not" / "there"
    result = skin_audit("demo", "--out", str(missing), "--angles", "0,90")
    assert result.returncode == 2, result.stderr
    assert str(missing) in result.stderr and "does not exist" in result.stderr
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("angles", ["abc", "1,,2", "nan", "inf"])
def test_bad_angles_exit_2(tmp_path, angles):
    result = skin_audit("demo", "--out", str(tmp_path), "--angles", angles)
    assert result.returncode == 2, result.stderr
    assert "--angles" in result.stderr and repr(angles) in result.stderr
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ the full demo


@pytest.fixture(scope="module")
def demo(bpy, tmp_path_factory):
    """One real run: ``demo --out DIR --angles 0,90,120,180 --method both``."""
    out = tmp_path_factory.mktemp("demo")
    result = skin_audit("demo", "--out", str(out), "--angles", ",".join(f"{a:g}" for a in ANGLES),
                        "--method", "both")
    return SimpleNamespace(out=out, result=result)


@pytest.fixture(scope="module")
def scene(demo):
    return json.loads((demo.out / "twist_scene.json").read_text(encoding="utf-8"))


@pytest.mark.blender
def test_demo_exits_0_and_writes_four_files(demo):
    assert demo.result.returncode == 0, demo.result.stderr
    # Exactly the four files: no staging folder or partial file left behind.
    assert {p.name for p in demo.out.iterdir()} == OUTPUTS
    for name in OUTPUTS:
        assert (demo.out / name).stat().st_size > 0, name


@pytest.mark.blender
def test_demo_prints_the_radius_table(demo):
    half_sqrt2 = f"{math.cos(math.pi / 4.0):.15g}"
    assert half_sqrt2 == "0.707106781186548"
    rows = [line for line in demo.result.stdout.splitlines() if line.split()[:2] == ["LBS", "90"]]
    assert len(rows) == 1 and half_sqrt2 in rows[0], demo.result.stdout
    # method, angle, analytic, numpy, Blender, ...: every measured column, not only the analytic one.
    analytic, numpy_ratio, blender_ratio = (float(x) for x in rows[0].split()[2:5])
    assert analytic == pytest.approx(math.sqrt(0.5), abs=1e-15)
    assert numpy_ratio == pytest.approx(math.sqrt(0.5), abs=1e-6)  # from the float32 mesh
    assert blender_ratio == pytest.approx(math.sqrt(0.5), abs=1e-6)  # Blender's float32
    summary = (demo.out / "twist_summary.txt").read_text(encoding="utf-8")
    assert half_sqrt2 in summary


@pytest.mark.blender
def test_radii_csv_against_the_closed_form(demo):
    with (demo.out / "twist_radii.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(METHODS) * len(ANGLES) * RINGS == 72
    keys = {(r["method"], float(r["angle_deg"]), int(r["ring"])) for r in rows}
    assert keys == {(m, a, k) for m in METHODS for a in ANGLES for k in range(RINGS)}
    for r in rows:
        z = float(r["z"])
        assert z == pytest.approx(HEIGHT * int(r["ring"]) / (RINGS - 1), abs=1e-6)
        w = z / HEIGHT
        assert float(r["child_weight"]) == pytest.approx(w, abs=1e-6)
        mine = expected_ratio(r["method"], w, math.radians(float(r["angle_deg"])))
        label = f"{r['method']} {r['angle_deg']} ring {r['ring']}"
        assert abs(float(r["analytic_ratio"]) - mine) < 1e-12, label
        assert abs(float(r["numpy_ratio"]) - mine) < 1e-6, label
        assert abs(float(r["blender_ratio"]) - mine) < 1e-6, label


@pytest.mark.blender
def test_wireframe_svg_has_one_panel_per_pose(demo):
    root = ET.parse(demo.out / "twist_wireframe.svg").getroot()
    assert root.tag == f"{SVG}svg"
    panels = root.findall(f"{SVG}g[@class='panel']")
    assert len(panels) == len(METHODS) * len(ANGLES)
    titles = []
    for panel in panels:
        title = panel.find(f"{SVG}text").text
        lines = panel.findall(f"{SVG}g/{SVG}line")
        assert len(lines) == 600, title  # every unique edge of the cylinder
        mid = panel.findall(f"{SVG}g[@class='highlight']/{SVG}line")
        assert len(mid) == SEGMENTS, title
        lengths = [math.hypot(*(float(e.get(f"{c}2")) - float(e.get(f"{c}1")) for c in "xy")) for e in mid]
        method, angle = re.match(r"(LBS|DQS) ([0-9.]+)", title).groups()
        titles.append((method.lower(), float(angle)))
        if (method, float(angle)) == ("LBS", 180.0):
            assert max(lengths) < 0.02, "the collapsed mid ring must be drawn as a point"
        else:
            assert min(lengths) > 1.0, title
    assert sorted(titles) == sorted((m, a) for m in METHODS for a in ANGLES)


@pytest.mark.blender
def test_scene_json_holds_what_the_spec_lists(scene):
    bind = np.array(scene["mesh"]["bind_vertices"])
    tris = np.array(scene["mesh"]["triangles"])
    assert bind.shape == (216, 3) and tris.shape == (384, 3)
    assert tris.min() == 0 and tris.max() == 215
    assert np.abs(np.hypot(bind[:, 0], bind[:, 1]) - 1.0).max() < 1e-6

    bones = scene["armature"]["bones"]
    assert bones == ["Root", "Child"]
    bind_m = np.array(scene["armature"]["bind_matrices"])
    inverse = np.array(scene["armature"]["inverse_bind_matrices"])
    assert bind_m.shape == inverse.shape == (2, 4, 4)
    assert np.abs(bind_m @ inverse - np.eye(4)).max() < 1e-6

    idx = np.array(scene["influences"]["joint_indices"])
    weights = np.array(scene["influences"]["weights"])
    assert idx.shape == weights.shape and idx.shape[0] == 216
    assert np.abs(weights.sum(axis=1) - 1.0).max() < 1e-12
    child_w = np.where(idx == bones.index("Child"), weights, 0.0).sum(axis=1)
    assert np.abs(child_w - bind[:, 2] / HEIGHT).max() < 1e-6

    poses = scene["poses"]
    assert [(p["method"], p["angle_deg"]) for p in poses] == [(m, a) for m in METHODS for a in ANGLES]
    for p in poses:
        current = np.array(p["current_world_matrices"])
        assert current.shape == (2, 4, 4)
        assert np.abs(np.array(p["skinning_matrices"]) - current @ inverse).max() < 1e-12
        numpy_pos = np.array(p["numpy_positions"])
        blender_pos = np.array(p["blender_positions"])
        assert numpy_pos.shape == blender_pos.shape == (216, 3)
        if p["method"] == "lbs":
            # Own LBS from the stored matrices: sum_j w_j (G_j B_j^-1) p.
            skin = current @ inverse
            hom = np.column_stack([bind, np.ones(len(bind))])
            mine = np.zeros((len(bind), 4))
            for k in range(idx.shape[1]):
                mine += weights[:, k, None] * np.einsum("vij,vj->vi", skin[idx[:, k]], hom)
            assert np.abs(mine[:, :3] - numpy_pos).max() < 1e-12
            assert np.abs(mine[:, :3] - blender_pos).max() < 4e-6


# ------------------------------------------------------------ the verifier


def tamper_blender(data):
    data["poses"][2]["blender_positions"][100][0] += 1e-3
    return "pose 2", "vertex 100"


def tamper_numpy(data):
    data["poses"][5]["numpy_positions"][37][1] += 1e-9
    return "pose 5", "vertex 37"


def tamper_skin(data):
    data["poses"][3]["skinning_matrices"][1][0][3] += 1e-6
    return "pose 3", ""


@pytest.mark.blender
def test_verify_accepts_the_demo_output(demo):
    result = skin_audit("verify", str(demo.out / "twist_scene.json"))
    assert result.returncode == 0, result.stderr
    assert "PASS" in result.stdout


@pytest.mark.blender
@pytest.mark.parametrize("tamper", [tamper_blender, tamper_numpy, tamper_skin],
                         ids=["blender", "numpy", "skin"])
def test_verify_rejects_a_tampered_copy(scene, tmp_path, tamper):
    data = copy.deepcopy(scene)
    pose, vertex = tamper(data)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = skin_audit("verify", str(path))
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert pose in result.stderr and vertex in result.stderr, result.stderr
    assert "PASS" not in result.stdout
