# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``babylon`` target against Babylon.js itself (9.35.0, headless, NullEngine, Node).

Babylon runs its CPU skinning (``computeBonesUsingShaders = false``) on the shared glTF
assets and on rule-breaking copies, at several animation times; the target's CPU model
must land within 1e-5 of the mesh size of every position Babylon computes, and Babylon's
NaN for a vertex without weights must come back as reported data. The GPU path cannot run
here (no WebGL); its rules are read from the shader source (see the module docstring of
``skin_audit.core.engines.babylon``).
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skin_audit.core.engines import babylon
from skin_audit.core.engines.gltf_path import gltf_engine_positions
from skin_audit.core.engines.targets import get_target
from skin_audit.core.gltf.document import load_gltf
from skin_audit.core.gltf.skin import skinned_primitives
from skin_audit.core.tolerances import BABYLON_MATCH_RELATIVE
from tests.factories.engine_reference import babylon_pose

from .variants import ASSETS, CESIUM, NEGATIVE_VARIANTS, VARIANTS, Rewrite

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "babylon_positions.mjs"

BABYLON_CPU_RELATIVE = BABYLON_MATCH_RELATIVE

#: Seconds; 100 is past every clip's end, where Babylon holds the last key (goToFrame clamps).
TIMES = [0.0, 0.37, 1.1, 100.0]

SHARED = {
    "SimpleSkin": ASSETS / "SimpleSkin" / "glTF" / "SimpleSkin.gltf",
    "SimpleSkin-embedded": ASSETS / "SimpleSkin" / "glTF-Embedded" / "SimpleSkin.gltf",
    "RiggedSimple": ASSETS / "RiggedSimple" / "glTF" / "RiggedSimple.gltf",
    "RiggedSimple-glb": ASSETS / "RiggedSimple" / "glTF-Binary" / "RiggedSimple.glb",
    "RiggedFigure": ASSETS / "RiggedFigure" / "glTF-Binary" / "RiggedFigure.glb",
    "CesiumMan": CESIUM,
    "Fox": ASSETS / "Fox" / "glTF-Binary" / "Fox.glb",
    "BlenderIO_03": ASSETS / "BlenderIO_03_skinned_cylinder" / "03_skinned_cylinder.gltf",
}


def morph_target(folder: Path) -> Path:
    """One morph target (a bulge of 5% of the mesh size) at influence 0.6, like a Blender shape key."""
    r = Rewrite(CESIUM)
    prim = r.json["meshes"][0]["primitives"][0]
    pos = r.read(prim["attributes"]["POSITION"])
    size = float(np.ptp(pos, axis=0).max())
    delta = 0.05 * size * np.stack([np.sin(7 * pos[:, 1]), np.cos(5 * pos[:, 2]), np.sin(3 * pos[:, 0])], axis=1)
    prim["targets"] = [{"POSITION": r.add(delta, 5126, "VEC3")}]
    r.json["meshes"][0]["weights"] = [0.6]
    return r.write(folder, "morph_target")


#: The three.js variants (tests/engines/variants.py), the negative weights, and a morph target.
BABYLON_VARIANTS: dict[str, Callable[[Path], Path]] = {
    **VARIANTS,
    **NEGATIVE_VARIANTS,
    "morph_target": morph_target,
}


def _run_babylon(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    request = {"jobs": [{**job, "file": str(job["file"])} for job in jobs]}
    done = subprocess.run(
        ["node", str(HARNESS)], cwd=HERE, input=json.dumps(request), capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        pytest.fail(f"Babylon harness failed ({done.returncode}):\n{done.stderr[-3000:]}", pytrace=False)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _positions(mesh: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(mesh["positions_f64_base64"]), dtype="<f8").reshape(-1, 3)


@pytest.fixture(scope="module")
def babylon_ready(engines_dir: Path) -> str:
    """The pinned @babylonjs/core, installed by the engines conftest (``npm ci``)."""
    version = json.loads((engines_dir / "node_modules" / "@babylonjs" / "core" / "package.json").read_text())["version"]
    assert version == babylon.BABYLON_VERSION, (
        f"installed @babylonjs/core {version}, the target models {babylon.BABYLON_VERSION}"
    )
    return str(version)


@pytest.fixture(scope="module")
def variant_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("babylon_variants")
    return {name: build(folder) for name, build in BABYLON_VARIANTS.items()}


@pytest.fixture(scope="module")
def runs(babylon_ready: str, variant_files: dict[str, Path]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every file at every time, in one Node process: (name, mode) -> Babylon's result."""
    jobs: list[tuple[str, str, dict[str, Any]]] = []
    for name, path in {**SHARED, **variant_files}.items():
        jobs.append((name, "cpu", {"file": path, "times": TIMES, "animation": 0, "mode": "cpu"}))
    jobs.append(("Fox/Run", "cpu", {"file": SHARED["Fox"], "times": [0.25], "animation": "Run", "mode": "cpu"}))
    for name in ("morph_target", "CesiumMan", "all_zero"):
        path = variant_files.get(name, SHARED.get(name))
        job = {"file": path, "times": TIMES[1:], "animation": 0, "mode": "position_data"}
        jobs.append((name, "position_data", job))
    answer = _run_babylon([job for _, _, job in jobs])
    assert answer["babylon"] == babylon.BABYLON_VERSION
    return {(name, mode): result for (name, mode, _), result in zip(jobs, answer["results"], strict=True)}


def _file_of(name: str, variant_files: dict[str, Path]) -> Path:
    return SHARED["Fox"] if name == "Fox/Run" else variant_files.get(name, SHARED.get(name, Path()))


Compared = list[tuple[float, np.ndarray, np.ndarray, babylon.BabylonPrimitive]]


def _compare(result: dict[str, Any], path: Path, clip: str | int, field: str) -> Compared:
    """(time, Babylon, model, primitive) for every skinned mesh Babylon returned."""
    doc = load_gltf(path)
    out = []
    for pose in result["poses"]:
        model = {(b.primitive.node, b.primitive.mesh, b.primitive.primitive): b
                 for b in babylon.babylon_gltf_positions(doc, clip, pose["time"])}
        assert len(pose["meshes"]) == len(model), (
            f"Babylon skinned {len(pose['meshes'])} primitives, the model {len(model)}"
        )
        for mesh in pose["meshes"]:
            prim = model[(mesh["node"], mesh["mesh"], mesh["primitive"])]
            out.append((pose["time"], _positions(mesh), getattr(prim, field), prim))
    return out


def _relative_error(engine: np.ndarray, model: np.ndarray, rest: np.ndarray) -> float:
    both = np.isfinite(engine).all(axis=1) & np.isfinite(model).all(axis=1)
    if not both.any():
        return 0.0
    return float(np.linalg.norm(engine[both] - model[both], axis=1).max()) / babylon.mesh_size(rest)


CPU_CASES = [*SHARED, "Fox/Run", *BABYLON_VARIANTS]


@pytest.mark.parametrize("name", CPU_CASES)
def test_cpu_model_matches_babylon(name: str, runs: dict, variant_files: dict[str, Path]) -> None:
    """Babylon's CPU skinning and the target's CPU model agree within 1e-5 of the mesh size."""
    clip = "Run" if name == "Fox/Run" else 0
    for time, engine, model, prim in _compare(runs[(name, "cpu")], _file_of(name, variant_files), clip, "cpu"):
        np.testing.assert_array_equal(
            ~np.isfinite(engine).all(axis=1), ~np.isfinite(model).all(axis=1),
            err_msg=f"{name} t={time}: Babylon and the model lose different vertices",
        )
        err = _relative_error(engine, model, prim.primitive.positions)
        assert err <= BABYLON_CPU_RELATIVE, f"{name} t={time}: max error {err:.3g} of the mesh size"


@pytest.mark.parametrize("name", ["morph_target", "CesiumMan", "all_zero"])
def test_position_data_applies_morph_then_skeleton(name: str, runs: dict, variant_files: dict[str, Path]) -> None:
    """``getPositionData(true, true)``: morph targets first, then the skeleton, as modelled."""
    compared = _compare(runs[(name, "position_data")], _file_of(name, variant_files), 0, "position_data")
    for time, engine, model, prim in compared:
        np.testing.assert_array_equal(~np.isfinite(engine).all(axis=1), ~np.isfinite(model).all(axis=1))
        err = _relative_error(engine, model, prim.primitive.positions)
        assert err <= BABYLON_CPU_RELATIVE, f"{name} t={time}: max error {err:.3g} of the mesh size"


def test_cpu_path_ignores_morph_targets(runs: dict, variant_files: dict[str, Path]) -> None:
    """The CPU-skinned vertex buffer lacks the shape key; getPositionData has it; the audit says so."""
    cpu = _compare(runs[("morph_target", "cpu")], variant_files["morph_target"], 0, "cpu")
    full = _compare(runs[("morph_target", "position_data")], variant_files["morph_target"], 0, "position_data")
    _, engine_cpu, _, prim = cpu[1]
    _, engine_full, _, _ = full[0]
    size = babylon.mesh_size(prim.primitive.positions)
    # The bulge is 5% of the size at influence 0.6: Babylon's two readings differ by far more than float noise.
    assert float(np.linalg.norm(engine_full - engine_cpu, axis=1).max()) / size > 0.01
    codes = {f.code: f for f in prim.findings}
    assert babylon.SHAPE_KEYS_IGNORED_ON_CPU in codes
    assert codes[babylon.SHAPE_KEYS_IGNORED_ON_CPU].count > 0.9 * len(prim.primitive.positions)


def test_all_zero_vertices_vanish_as_reported_data(runs: dict, variant_files: dict[str, Path]) -> None:
    """Babylon's NaN (every seventh vertex has no weight) is a result: the same vertices, reported."""
    for time, engine, model, prim in _compare(runs[("all_zero", "cpu")], variant_files["all_zero"], 0, "cpu"):
        lost = np.flatnonzero(~np.isfinite(engine).all(axis=1))
        np.testing.assert_array_equal(lost, np.arange(0, len(engine), 7), err_msg=f"t={time}")
        assert np.isnan(model[lost]).all()
        # The shader draws nothing there either: clip w = 0.
        assert np.isnan(prim.gpu[lost]).all()
        found = {f.code: f for f in prim.findings}[babylon.VANISHING_VERTICES]
        assert found.severity == "ERROR"
        assert found.vertices == tuple(int(v) for v in lost)
        assert found.details["target"] == "babylon"
        json.dumps(found.to_dict())  # plain data, no NaN leaks into the report


def test_second_set_is_read(runs: dict, variant_files: dict[str, Path]) -> None:
    """Babylon uses JOINTS_1/WEIGHTS_1: dropping the second set would miss it by a wide margin."""
    for time, engine, model, prim in _compare(runs[("second_set", "cpu")], variant_files["second_set"], 0, "cpu")[1:]:
        first = prim.primitive.sets[0]
        mats = _joint_matrices(variant_files["second_set"], time, prim)
        first_only = babylon.deform_cpu(prim.primitive.positions, [first.joints], [first.weights], mats)
        assert _relative_error(engine, first_only, prim.primitive.positions) > 100 * BABYLON_CPU_RELATIVE, f"t={time}"
        assert _relative_error(engine, model, prim.primitive.positions) <= BABYLON_CPU_RELATIVE


def test_unnormalised_weights_are_divided_on_cpu_not_before(runs: dict, variant_files: dict[str, Path]) -> None:
    """The CPU path divides by the weight sum (homogeneous divide); LBS on the stored weights would not."""
    path = variant_files["unnormalised"]
    for time, engine, _, prim in _compare(runs[("unnormalised", "cpu")], path, 0, "cpu")[1:]:
        mats = _joint_matrices(path, time, prim)
        joints = [s.joints for s in prim.primitive.sets]
        weights = [s.weights for s in prim.primitive.sets]
        # The shader's undivided world position: what lighting reads, far from where Babylon draws.
        undivided = babylon.gpu_world_positions(prim.primitive.positions, joints, weights, mats)[:, :3]
        assert _relative_error(engine, undivided, prim.primitive.positions) > 0.05
        codes = {f.code: f for f in prim.findings}
        assert codes[babylon.UNNORMALISED_GPU_SHADING].count > 0.9 * len(engine)


def test_negative_weight_cpu_and_gpu_differ(runs: dict, variant_files: dict[str, Path]) -> None:
    """Babylon's CPU skips the -0.25 weight (measured); the shader would use it (read): reported."""
    results = _compare(runs[("negative_weight", "cpu")], variant_files["negative_weight"], 0, "cpu")
    _, engine, _, prim = results[1]
    assert _relative_error(engine, prim.gpu, prim.primitive.positions) > 1e-3
    differ = {f.code: f for f in prim.findings}[babylon.CPU_GPU_DIFFER]
    assert set(differ.vertices) <= set(range(0, len(engine), 5))


def test_weight_sums_below_zero_are_not_drawn(runs: dict, variant_files: dict[str, Path]) -> None:
    """Sums below zero: Babylon's CPU path loses only the vertices with no positive weight
    (measured, every fifth from 1); the drawn position (the shader's: the ``babylon`` target)
    has none for the sum -0.5 ones either (every fifth from 0, read from the shader)."""
    path = variant_files["negative_sum"]
    doc = load_gltf(path)
    for time, engine, _, prim in _compare(runs[("negative_sum", "cpu")], path, 0, "cpu"):
        n = len(engine)
        np.testing.assert_array_equal(np.flatnonzero(~np.isfinite(engine).all(axis=1)), np.arange(1, n, 5))
        below = np.zeros(n, dtype=bool)
        below[::5] = below[1::5] = True
        drawn = {(e.primitive.node, e.primitive.mesh, e.primitive.primitive): e
                 for e in gltf_engine_positions(doc, get_target("babylon"), 0, time)}
        entry = drawn[(prim.primitive.node, prim.primitive.mesh, prim.primitive.primitive)]
        np.testing.assert_array_equal(~np.isfinite(entry.positions).all(axis=1), below, err_msg=f"t={time}")
        np.testing.assert_array_equal(~np.isfinite(prim.gpu).all(axis=1), below, err_msg=f"t={time}")


def _joint_matrices(path: Path, time: float, prim: babylon.BabylonPrimitive) -> np.ndarray:
    from skin_audit.core.gltf.skin import joint_matrices

    doc = load_gltf(path)
    return joint_matrices(doc, prim.primitive.skin, babylon_pose(doc, 0, time))


@pytest.mark.parametrize("name", ["unnormalised", "second_set", "quantised_ubyte", "quantised_ushort", "CesiumMan"])
def test_weights_reach_babylon_as_stored(name: str, runs: dict, variant_files: dict[str, Path]) -> None:
    """Babylon's vertex buffers (which its shader reads too) hold the file's weights: not normalised,
    integers divided by 255 or 65535, the second set read as 8 influences."""
    doc = load_gltf(_file_of(name, variant_files))
    prims = {(p.node, p.mesh, p.primitive): p for p in skinned_primitives(doc)}
    for mesh in runs[(name, "cpu")]["poses"][0]["meshes"]:
        prim = prims[(mesh["node"], mesh["mesh"], mesh["primitive"])]
        held = [np.frombuffer(base64.b64decode(b), dtype="<f8").reshape(-1, 4) for b in mesh["weight_sets_f64_base64"]]
        assert mesh["num_bone_influencers"] == 4 * min(len(prim.sets), babylon.MAX_SETS)
        assert len(held) == min(len(prim.sets), babylon.MAX_SETS)
        for stored, engine in zip(prim.sets, held, strict=True):
            # Babylon's float32 copy of the dequantised value.
            np.testing.assert_allclose(engine, stored.weights, rtol=0, atol=1e-7)


@pytest.mark.parametrize(("name", "severity"), [("unnormalised", "WARNING"), ("quantised_ubyte", "INFO")])
def test_weight_sums_off_one_are_reported_by_cause(name: str, severity: str, variant_files: dict[str, Path]) -> None:
    """A user's unnormalised weights are a WARNING; byte rounding (sums 1 +- 2/255) is INFO."""
    (prim,) = babylon.babylon_gltf_positions(load_gltf(variant_files[name]), 0, 0.37)
    found = {f.code: f for f in prim.findings}[babylon.UNNORMALISED_GPU_SHADING]
    assert found.severity == severity
    assert found.details["target"] == "babylon"


@pytest.mark.parametrize("name", [*SHARED, "second_set", "unnormalised", "all_zero", "quantised_ubyte",
                                  "non_unit_quat_cesium", "cubicspline", "morph_target", "negative_weight"])
def test_babylon_target_draws_where_babylon_skins(name: str, runs: dict, variant_files: dict[str, Path]) -> None:
    """The ``babylon`` entry of the targets (the shader's drawn position) is Babylon's CPU result
    wherever weights are not negative; with negative weights it is the shader's, not the CPU's;
    with a morph target it is ``getPositionData(true, true)`` (morph first, as the shader does)."""
    path = _file_of(name, variant_files)
    doc = load_gltf(path)
    target = get_target("babylon")
    for pose in runs[(name, "position_data" if name == "morph_target" else "cpu")]["poses"]:
        drawn = {(e.primitive.node, e.primitive.mesh, e.primitive.primitive): e
                 for e in gltf_engine_positions(doc, target, 0, pose["time"])}
        for mesh in pose["meshes"]:
            engine = _positions(mesh)
            entry = drawn[(mesh["node"], mesh["mesh"], mesh["primitive"])]
            np.testing.assert_array_equal(~np.isfinite(engine).all(axis=1), ~np.isfinite(entry.positions).all(axis=1))
            err = _relative_error(engine, entry.positions, entry.primitive.positions)
            if name == "negative_weight":
                assert err > 1e-3, "the shader keeps the negative weight the CPU path skips"
            else:
                assert err <= BABYLON_CPU_RELATIVE, f"{name} t={pose['time']}: {err:.3g} of the mesh size"
