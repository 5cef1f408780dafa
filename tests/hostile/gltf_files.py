# SPDX-License-Identifier: GPL-3.0-or-later
"""Minimal skinned glTF files written byte by byte (no Blender), some broken on purpose.

One quad on two joints along +Y, weights split between them.  ``ibm`` and
``joints`` let a test plant a NaN inverse bind matrix or out-of-range joint
indices; everything else is a valid glTF 2.0 file.
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np


def _accessor(doc: dict, blob: bytearray, data: np.ndarray, kind: str, component: int,
              with_bounds: bool = False) -> int:
    while len(blob) % 4:
        blob.append(0)
    offset = len(blob)
    raw = np.ascontiguousarray(data).tobytes()
    blob.extend(raw)
    doc["bufferViews"].append({"buffer": 0, "byteOffset": offset, "byteLength": len(raw)})
    acc = {"bufferView": len(doc["bufferViews"]) - 1, "componentType": component, "count": int(len(data)),
           "type": kind}
    if with_bounds:
        acc["min"] = data.min(axis=0).tolist()
        acc["max"] = data.max(axis=0).tolist()
    doc["accessors"].append(acc)
    return len(doc["accessors"]) - 1


def skinned_quad_gltf(path: Path, ibm: np.ndarray | None = None, joints: np.ndarray | None = None) -> Path:
    """Write a skinned quad to ``path`` (.gltf with an embedded buffer); return the path."""
    positions = np.array([[-0.5, 0, 0], [0.5, 0, 0], [0.5, 2, 0], [-0.5, 2, 0]], dtype=np.float32)
    indices = np.array([0, 1, 2, 0, 2, 3], dtype=np.uint16)
    if joints is None:
        joints = np.array([[0, 1, 0, 0]] * 4, dtype=np.uint16)
    weights = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0]], dtype=np.float32)
    if ibm is None:
        ibm = np.stack([np.eye(4), np.eye(4)])
        ibm[1, 1, 3] = -1.0  # joint 1 sits at y = 1
    doc: dict = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0, 1]}],
                 "bufferViews": [], "accessors": []}
    blob = bytearray()
    pos = _accessor(doc, blob, positions, "VEC3", 5126, with_bounds=True)
    idx = _accessor(doc, blob, indices, "SCALAR", 5123)
    jnt = _accessor(doc, blob, np.asarray(joints, dtype=np.uint16), "VEC4", 5123)
    wts = _accessor(doc, blob, weights, "VEC4", 5126)
    # glTF stores matrices column-major.
    inv = _accessor(doc, blob, np.asarray(ibm, dtype=np.float32).transpose(0, 2, 1).reshape(-1, 16), "MAT4", 5126)
    doc["meshes"] = [{"primitives": [{"attributes": {"POSITION": pos, "JOINTS_0": jnt, "WEIGHTS_0": wts},
                                      "indices": idx}]}]
    doc["nodes"] = [{"name": "Mesh", "mesh": 0, "skin": 0},
                    {"name": "Root", "children": [2]},
                    {"name": "Tip", "translation": [0.0, 1.0, 0.0]}]
    doc["skins"] = [{"joints": [1, 2], "inverseBindMatrices": inv}]
    doc["buffers"] = [{"byteLength": len(blob),
                       "uri": "data:application/octet-stream;base64," + base64.b64encode(bytes(blob)).decode()}]
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def nan_ibm_gltf(path: Path) -> Path:
    ibm = np.stack([np.eye(4), np.eye(4)])
    ibm[1, 0, 0] = np.nan
    return skinned_quad_gltf(path, ibm=ibm)


def bad_joints_gltf(path: Path) -> Path:
    return skinned_quad_gltf(path, joints=np.array([[0, 1, 0, 0], [7, 0, 0, 0], [0, 1, 0, 0], [300, 1, 0, 0]]))


def random_body_fbx(path: Path, size: int = 3000, seed: int = 1) -> Path:
    """A binary FBX header (version 7400) followed by random bytes."""
    rng = np.random.default_rng(seed)
    header = b"Kaydara FBX Binary  \x00\x1a\x00" + struct.pack("<I", 7400)
    path.write_bytes(header + rng.integers(0, 256, size - len(header), dtype=np.uint8).tobytes())
    return path


def skinned_grid_glb(path: Path, side: int, off: int = 3) -> Path:
    """A ``side`` x ``side`` grid (1 x 2 units) on the quad's two joints as a binary .glb; the first
    ``off`` vertices weigh 0.4 + 0.4 (a weights-not-normalized finding for ``fix`` to repair)."""
    u, v = np.meshgrid(np.linspace(-0.5, 0.5, side), np.linspace(0.0, 2.0, side))
    positions = np.stack([u.ravel(), v.ravel(), np.zeros(side * side)], axis=1).astype(np.float32)
    k = np.arange(side - 1)
    a = (k[:, None] * side + k[None, :]).ravel()
    quads = np.stack([a, a + 1, a + side + 1, a, a + side + 1, a + side], axis=1)
    indices = quads.astype(np.uint32).ravel()
    child = np.clip(positions[:, 1] / 2.0, 0.0, 1.0)
    weights = np.zeros((len(positions), 4), dtype=np.float32)
    weights[:, 0], weights[:, 1] = 1.0 - child, child
    weights[:off, :2] = 0.4
    joints = np.tile(np.array([0, 1, 0, 0], dtype=np.uint16), (len(positions), 1))
    ibm = np.stack([np.eye(4), np.eye(4)])
    ibm[1, 1, 3] = -1.0
    doc: dict = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0, 1]}],
                 "bufferViews": [], "accessors": []}
    blob = bytearray()
    pos = _accessor(doc, blob, positions, "VEC3", 5126, with_bounds=True)
    idx = _accessor(doc, blob, indices, "SCALAR", 5125)
    jnt = _accessor(doc, blob, joints, "VEC4", 5123)
    wts = _accessor(doc, blob, weights, "VEC4", 5126)
    inv = _accessor(doc, blob, ibm.astype(np.float32).transpose(0, 2, 1).reshape(-1, 16), "MAT4", 5126)
    doc["meshes"] = [{"primitives": [{"attributes": {"POSITION": pos, "JOINTS_0": jnt, "WEIGHTS_0": wts},
                                      "indices": idx}]}]
    doc["nodes"] = [{"name": "Grid", "mesh": 0, "skin": 0},
                    {"name": "Root", "children": [2]},
                    {"name": "Tip", "translation": [0.0, 1.0, 0.0]}]
    doc["skins"] = [{"joints": [1, 2], "inverseBindMatrices": inv}]
    while len(blob) % 4:
        blob.append(0)
    doc["buffers"] = [{"byteLength": len(blob)}]
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<I4s", len(text), b"JSON") + text + struct.pack("<I4s", len(blob), b"BIN\0") + bytes(blob)
    path.write_bytes(b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body)
    return path
