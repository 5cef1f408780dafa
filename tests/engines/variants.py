# SPDX-License-Identifier: GPL-3.0-or-later
"""Rule-breaking copies of the shared glTF samples, built in code (test-only).

Each variant keeps the original file's JSON and buffers, appends new data in an extra
.bin buffer and points the attribute or sampler at it, then writes a .gltf beside it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from skin_audit.core.gltf.document import load_gltf, read_accessor

ASSETS = Path(__file__).resolve().parents[1] / "assets"
CESIUM = ASSETS / "CesiumMan" / "glTF-Binary" / "CesiumMan.glb"
RIGGED_SIMPLE = ASSETS / "RiggedSimple" / "glTF" / "RiggedSimple.gltf"

_DTYPES = {5121: "<u1", 5123: "<u2", 5125: "<u4", 5126: "<f4"}


class Rewrite:
    """A copy of a glTF asset that can take new accessors."""

    def __init__(self, source: Path):
        self.doc = load_gltf(source)
        self.json: dict[str, Any] = copy.deepcopy(self.doc.json)
        self.extra = bytearray()
        self.json.setdefault("bufferViews", [])
        self.json["buffers"].append({"byteLength": 0})
        self.extra_index = len(self.json["buffers"]) - 1

    def read(self, accessor: int) -> np.ndarray:
        return read_accessor(self.doc, accessor)

    def add(self, values: np.ndarray, component_type: int, kind: str, normalized: bool = False) -> int:
        data = np.ascontiguousarray(values, dtype=_DTYPES[component_type]).tobytes()
        while len(self.extra) % 4:
            self.extra.append(0)
        self.json["bufferViews"].append(
            {"buffer": self.extra_index, "byteOffset": len(self.extra), "byteLength": len(data)}
        )
        self.extra += data
        acc: dict[str, Any] = {
            "bufferView": len(self.json["bufferViews"]) - 1,
            "componentType": component_type,
            "count": int(len(values)),
            "type": kind,
        }
        if normalized:
            acc["normalized"] = True
        if kind in ("SCALAR", "VEC3", "VEC4") and component_type == 5126:
            v = np.asarray(values, dtype=np.float32).reshape(len(values), -1)
            acc["min"], acc["max"] = v.min(axis=0).tolist(), v.max(axis=0).tolist()
        self.json["accessors"].append(acc)
        return len(self.json["accessors"]) - 1

    def skinned_attributes(self) -> dict[str, int]:
        return self.json["meshes"][0]["primitives"][0]["attributes"]

    def write(self, folder: Path, name: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        if not self.extra:
            self.extra += bytes(4)  # a buffer may not be empty (byteLength >= 1)
        for i, buf in enumerate(self.json["buffers"]):
            data = bytes(self.extra) if i == self.extra_index else self.doc.buffers[i]
            (folder / f"{name}_{i}.bin").write_bytes(data)
            buf["uri"] = f"{name}_{i}.bin"
            buf["byteLength"] = len(data)
        for key in ("images", "textures", "samplers", "materials"):
            self.json.pop(key, None)
        for mesh in self.json.get("meshes", []):
            for prim in mesh["primitives"]:
                prim.pop("material", None)
        path = folder / f"{name}.gltf"
        path.write_text(json.dumps(self.json))
        return path


def _rng() -> np.random.Generator:
    return np.random.default_rng(11)


def unnormalised(folder: Path) -> Path:
    """Every vertex's weights scaled by a factor in [0.3, 1.7]."""
    r = Rewrite(CESIUM)
    attrs = r.skinned_attributes()
    w = r.read(attrs["WEIGHTS_0"])
    attrs["WEIGHTS_0"] = r.add(w * _rng().uniform(0.3, 1.7, (len(w), 1)), 5126, "VEC4")
    return r.write(folder, "unnormalised")


def second_set(folder: Path) -> Path:
    """A JOINTS_1/WEIGHTS_1 set (random joints, 0.1 each) with the first set scaled to 0.6."""
    r = Rewrite(CESIUM)
    attrs = r.skinned_attributes()
    w = r.read(attrs["WEIGHTS_0"])
    n_joints = len(r.json["skins"][0]["joints"])
    rng = _rng()
    j1 = rng.integers(0, n_joints, (len(w), 4))
    attrs["WEIGHTS_0"] = r.add(w * 0.6, 5126, "VEC4")
    attrs["JOINTS_1"] = r.add(j1, 5123, "VEC4")
    attrs["WEIGHTS_1"] = r.add(np.full((len(w), 4), 0.1), 5126, "VEC4")
    return r.write(folder, "second_set")


def all_zero(folder: Path) -> Path:
    """Every seventh vertex's weights all zero."""
    r = Rewrite(CESIUM)
    attrs = r.skinned_attributes()
    w = r.read(attrs["WEIGHTS_0"]).copy()
    w[::7] = 0.0
    attrs["WEIGHTS_0"] = r.add(w, 5126, "VEC4")
    return r.write(folder, "all_zero")


def quantised(component_type: int) -> Callable[[Path], Path]:
    """Weights as normalised UNSIGNED_BYTE (5121) or UNSIGNED_SHORT (5123), rounded per slot."""
    scale = {5121: 255.0, 5123: 65535.0}[component_type]

    def build(folder: Path) -> Path:
        r = Rewrite(CESIUM)
        attrs = r.skinned_attributes()
        w = r.read(attrs["WEIGHTS_0"])
        attrs["WEIGHTS_0"] = r.add(np.round(w * scale), component_type, "VEC4", normalized=True)
        return r.write(folder, f"quantised_{component_type}")

    return build


def non_unit_quaternions(source: Path, name: str) -> Callable[[Path], Path]:
    """Every rotation keyframe scaled by a length in [0.8, 1.2]."""

    def build(folder: Path) -> Path:
        r = Rewrite(source)
        rng = _rng()
        for anim in r.json.get("animations", []):
            for ch in anim["channels"]:
                if ch["target"]["path"] != "rotation":
                    continue
                s = anim["samplers"][ch["sampler"]]
                q = r.read(s["output"])
                s["output"] = r.add(q * rng.uniform(0.8, 1.2, (len(q), 1)), 5126, "VEC4")
        return r.write(folder, name)

    return build


def interpolation(mode: str) -> Callable[[Path], Path]:
    """RiggedSimple with every sampler turned to STEP or CUBICSPLINE (random tangents)."""

    def build(folder: Path) -> Path:
        r = Rewrite(RIGGED_SIMPLE)
        rng = _rng()
        for anim in r.json.get("animations", []):
            for s in anim["samplers"]:
                s["interpolation"] = mode
                if mode == "CUBICSPLINE":
                    v = r.read(s["output"])
                    a = rng.normal(0, 0.3, v.shape)
                    b = rng.normal(0, 0.3, v.shape)
                    kind = {3: "VEC3", 4: "VEC4"}[v.shape[1]]
                    s["output"] = r.add(np.stack([a, v, b], axis=1).reshape(-1, v.shape[1]), 5126, kind)
        return r.write(folder, f"interp_{mode.lower()}")

    return build


def morph_targets(folder: Path) -> Path:
    """RiggedSimple with two morph targets: default mesh weights and a LINEAR weights channel."""
    r = Rewrite(RIGGED_SIMPLE)
    prim = r.json["meshes"][0]["primitives"][0]
    pos = r.read(prim["attributes"]["POSITION"])
    rng = _rng()
    prim["targets"] = [{"POSITION": r.add(rng.normal(0, 0.05, pos.shape), 5126, "VEC3")} for _ in range(2)]
    r.json["meshes"][0]["weights"] = [0.3, 0.6]
    anim = r.json["animations"][0]
    times = r.read(anim["samplers"][0]["input"])[:, 0]
    keys = rng.uniform(0.0, 1.0, (len(times), 2))
    anim["samplers"].append({"input": anim["samplers"][0]["input"], "output": r.add(keys.reshape(-1), 5126, "SCALAR")})
    mesh_node = next(i for i, n in enumerate(r.json["nodes"]) if "mesh" in n)
    anim["channels"].append({"sampler": len(anim["samplers"]) - 1, "target": {"node": mesh_node, "path": "weights"}})
    return r.write(folder, "morph_targets")


def negative_weight(folder: Path) -> Path:
    """Every fifth vertex weighted (1.25, -0.25) on two joints: Babylon's CPU skips the negative one,
    three.js divides by 1.5 (the sum of absolute values), a plain sum would by 1."""
    r = Rewrite(CESIUM)
    attrs = r.skinned_attributes()
    w = r.read(attrs["WEIGHTS_0"]).copy()
    j = r.read(attrs["JOINTS_0"]).astype(np.int64)
    n_joints = len(r.json["skins"][0]["joints"])
    w[::5] = [1.25, -0.25, 0.0, 0.0]
    j[::5, 1] = (j[::5, 0] + 3) % n_joints
    attrs["WEIGHTS_0"] = r.add(w, 5126, "VEC4")
    attrs["JOINTS_0"] = r.add(j, 5123, "VEC4")
    return r.write(folder, "negative_weight")


def negative_sum(folder: Path) -> Path:
    """Weight sums below zero: every fifth vertex (0.5, -1.0) on two joints (sum -0.5), the next one
    (-1.0) alone (sum -1): Babylon's shader draws neither (clip w < 0), its CPU path skips the
    negative weights (the first at its one positive joint, the second lost)."""
    r = Rewrite(CESIUM)
    attrs = r.skinned_attributes()
    w = r.read(attrs["WEIGHTS_0"]).copy()
    j = r.read(attrs["JOINTS_0"]).astype(np.int64)
    n_joints = len(r.json["skins"][0]["joints"])
    w[::5] = [0.5, -1.0, 0.0, 0.0]
    j[::5, 1] = (j[::5, 0] + 3) % n_joints
    w[1::5] = [-1.0, 0.0, 0.0, 0.0]
    attrs["WEIGHTS_0"] = r.add(w, 5126, "VEC4")
    attrs["JOINTS_0"] = r.add(j, 5123, "VEC4")
    return r.write(folder, "negative_sum")


#: Kept apart from VARIANTS (the validator comparison iterates over those): negative weights.
NEGATIVE_VARIANTS: dict[str, Callable[[Path], Path]] = {"negative_weight": negative_weight,
                                                        "negative_sum": negative_sum}


#: Kept apart from VARIANTS (other harnesses iterate over those): morph targets.
MORPH_VARIANTS: dict[str, Callable[[Path], Path]] = {"morph_targets": morph_targets}

#: name -> builder(folder) -> path of the written .gltf
VARIANTS: dict[str, Callable[[Path], Path]] = {
    "unnormalised": unnormalised,
    "second_set": second_set,
    "all_zero": all_zero,
    "quantised_ubyte": quantised(5121),
    "quantised_ushort": quantised(5123),
    "non_unit_quat_cesium": non_unit_quaternions(CESIUM, "non_unit_quat_cesium"),
    "non_unit_quat_rigged_simple": non_unit_quaternions(RIGGED_SIMPLE, "non_unit_quat_rigged_simple"),
    "step": interpolation("STEP"),
    "cubicspline": interpolation("CUBICSPLINE"),
}
