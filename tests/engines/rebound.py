# SPDX-License-Identifier: GPL-3.0-or-later
"""Skinned glTF files built in code that Blender's glTF importer re-skins into a bind pose of its
own (``skin_into_bind_pose``), so its mesh data is not the file's POSITION.

``rebound_character`` is shaped like the files exported by Mixamo and many DCCs: the joints hang
under an ``Armature`` node that is rotated, scaled by 0.01 and moved (so the inverse bind matrices
carry that transform and the importer's guessed bind pose does not cancel it), the joints at rest
are posed away from the bind pose, the mesh node has a transform of its own (ignored by skinning,
3.7.3.3), and the mesh has five primitives (three triangle lists, a strip, a fan) whose indices
skip rows of POSITION and list the rest out of order.  Blender imports it fine: one mesh, each
primitive's used rows in ascending order, moved by the re-skinning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.core.test_gltf_reader import Tiny


def _trs(t: Any = (0, 0, 0), r: Any = (0, 0, 0, 1), s: Any = (1, 1, 1)) -> np.ndarray:
    x, y, z, w = r
    rot = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    m = np.eye(4)
    m[:3, :3] = rot * np.asarray(s, dtype=float)
    m[:3, 3] = t
    return m


def _quat(axis: Any, degrees: float) -> list[float]:
    a = np.asarray(axis, dtype=float)
    a /= np.linalg.norm(a)
    h = np.radians(degrees) / 2
    return [*(a * np.sin(h)).tolist(), float(np.cos(h))]


#: The Armature node: 90 degrees about X, scale 0.01, moved; the joints live in centimetres.
ARMATURE = {"t": [0.3, 0.0, -0.2], "r": _quat((1, 0, 0), 90.0), "s": [0.01, 0.01, 0.01]}
#: Joints' bind pose (local to their parent) and their rest pose (posed away from it).
BIND_LOCAL = {"Hips": ([0.0, 0.0, 100.0], [0, 0, 0, 1]), "Spine": ([0.0, 0.0, 50.0], [0, 0, 0, 1]),
              "Head": ([0.0, 0.0, 45.0], [0, 0, 0, 1])}
REST_LOCAL = {"Hips": ([2.0, 0.0, 101.0], _quat((0, 1, 0), 12.0)),
              "Spine": ([0.0, 0.0, 50.0], _quat((1, 0.3, 0), 35.0)),
              "Head": ([0.0, 0.0, 45.0], _quat((0, 0, 1), -25.0))}
JOINT_NAMES = ("Hips", "Spine", "Head")


def _grid(z0: float, z1: float, rings: int, radius: float, around: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """A tube in Armature-local centimetres (vertices, triangles), Z along the spine."""
    zs = np.linspace(z0, z1, rings)
    a = np.linspace(0, 2 * np.pi, around, endpoint=False)
    v = np.array([[radius * np.cos(t), radius * np.sin(t), z] for z in zs for t in a])
    tris = []
    for r in range(rings - 1):
        for k in range(around):
            p, q = r * around + k, r * around + (k + 1) % around
            tris += [[p, q, q + around], [p, q + around, p + around]]
    return v, np.array(tris)


def _weights(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Joints and weights by height: Hips below 110, blending to Spine up to 160, then Head."""
    j = np.zeros((len(z), 4), dtype=np.uint8)
    w = np.zeros((len(z), 4), dtype=np.float32)
    j[:, :3] = [0, 1, 2]
    t1 = np.clip((z - 100.0) / 50.0, 0, 1)
    t2 = np.clip((z - 150.0) / 40.0, 0, 1)
    w[:, 0] = 1 - t1
    w[:, 1] = t1 * (1 - t2)
    w[:, 2] = t1 * t2
    return j, w


def rebound_character(folder: Path, name: str = "rebound.gltf", animated: bool = True) -> Path:
    """The file described in the module docstring (see the constants above)."""
    t = Tiny()
    arm = _trs(ARMATURE["t"], ARMATURE["r"], ARMATURE["s"])
    bind_world = {}
    parent = arm
    for n in JOINT_NAMES:
        tr, rot = BIND_LOCAL[n]
        parent = parent @ _trs(tr, rot)
        bind_world[n] = parent
    ibm = np.stack([np.linalg.inv(bind_world[n]) for n in JOINT_NAMES])
    ibm_acc = t.accessor(ibm.transpose(0, 2, 1).reshape(-1, 16), "<f4", 5126, "MAT4")
    primitives = []
    rng = np.random.default_rng(7)
    for z0, z1, rings, radius in ((80.0, 120.0, 4, 14.0), (120.0, 170.0, 5, 11.0), (170.0, 200.0, 3, 8.0)):
        local, tris = _grid(z0, z1, rings, radius)
        # Rows of POSITION the indices never use: two before the tube, one after every ring.
        unused = rng.normal(scale=30.0, size=(2 + rings, 3)) + [0, 0, 300.0]
        order = rng.permutation(len(local))  # rows stored out of the tube's order
        stored_local = np.concatenate([unused[:2], local[order], unused[2:]])
        row_of = np.empty(len(local), dtype=np.int64)
        row_of[order] = np.arange(len(local)) + 2
        world = (stored_local @ arm[:3, :3].T) + arm[:3, 3]
        joints, weights = _weights(stored_local[:, 2])
        weights[:2] = weights[len(local) + 2:] = [1.0, 0.0, 0.0, 0.0]  # unused rows: valid, never drawn
        joints[weights == 0] = 0  # unused slots name joint 0 (3.7.3.1)
        pos = t.accessor(world, "<f4", 5126, "VEC3", min=world.min(axis=0).tolist(), max=world.max(axis=0).tolist())
        idx = t.accessor(row_of[tris].reshape(-1), "<u2", 5123, "SCALAR")
        primitives.append({"attributes": {"POSITION": pos, "JOINTS_0": t.accessor(joints, "<u1", 5121, "VEC4"),
                                          "WEIGHTS_0": t.accessor(weights, "<f4", 5126, "VEC4")}, "indices": idx})
    # A neck band as a triangle strip and a head cap as a fan (modes 5 and 6), rows again out of order.
    a = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    ring = lambda z, r: np.column_stack([r * np.cos(a), r * np.sin(a), np.full(8, z)])  # noqa: E731
    band = np.concatenate([ring(200.0, 8.0), ring(210.0, 6.0), [[0.0, 0.0, 218.0]]])
    strip = np.ravel(np.column_stack([np.arange(8), np.arange(8) + 8]))
    for local, idx_list, mode in ((band, np.concatenate([strip, [0, 8]]), 5),
                                  (band, np.concatenate([[16], np.arange(8, 16), [8]]), 6)):
        order = rng.permutation(len(local))
        stored_local = np.concatenate([[[0.0, 0.0, 400.0]], local[order]])  # row 0 unused
        row_of = np.empty(len(local), dtype=np.int64)
        row_of[order] = np.arange(len(local)) + 1
        world = (stored_local @ arm[:3, :3].T) + arm[:3, 3]
        joints, weights = _weights(stored_local[:, 2])
        joints[weights == 0] = 0
        pos = t.accessor(world, "<f4", 5126, "VEC3", min=world.min(axis=0).tolist(), max=world.max(axis=0).tolist())
        primitives.append({"attributes": {"POSITION": pos, "JOINTS_0": t.accessor(joints, "<u1", 5121, "VEC4"),
                                          "WEIGHTS_0": t.accessor(weights, "<f4", 5126, "VEC4")},
                           "indices": t.accessor(row_of[idx_list], "<u2", 5123, "SCALAR"), "mode": mode})
    t.json["meshes"] = [{"name": "BodyMesh", "primitives": primitives}]
    t.json["skins"] = [{"joints": [1, 2, 3], "inverseBindMatrices": ibm_acc}]
    nodes: list[dict[str, Any]] = [{"name": "Armature", "translation": ARMATURE["t"], "rotation": ARMATURE["r"],
                                    "scale": ARMATURE["s"], "children": [1, 4]}]
    for k, n in enumerate(JOINT_NAMES):
        tr, rot = REST_LOCAL[n]
        node: dict[str, Any] = {"name": n, "translation": tr, "rotation": rot}
        if k + 1 < len(JOINT_NAMES):
            node["children"] = [k + 2]
        nodes.append(node)
    nodes.append({"name": "Body", "mesh": 0, "skin": 0, "translation": [5.0, 0.0, 0.0]})
    t.json["nodes"] = nodes
    t.json["scenes"] = [{"nodes": [0]}]
    t.json["scene"] = 0
    if animated:
        times = t.accessor([0.0, 1.0, 2.0], "<f4", 5126, "SCALAR", min=[0.0], max=[2.0])
        keys = t.accessor([REST_LOCAL["Spine"][1], _quat((0, 1, 0.2), -40.0), _quat((1, 0, 0), 20.0)],
                          "<f4", 5126, "VEC4")
        t.json["animations"] = [{"name": "Bend", "samplers": [{"input": times, "output": keys}],
                                 "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}]}]
    return t.gltf(folder, name) if name.endswith(".gltf") else t.glb(folder, name)


def shared_mesh(folder: Path, name: str = "shared.gltf") -> Path:
    """One mesh (a quad) drawn by two unnamed nodes, each with its own skin of one unnamed joint:
    the first joint moved 1 along +X, the second 3 along +Y.  Blender's importer makes two objects
    with the same faces; only their vertex groups (``Node_0``, ``Node_1``) tell them apart."""
    t = Tiny()
    quad = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    pos = t.accessor(quad, "<f4", 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    joints = t.accessor([[0, 0, 0, 0]] * 4, "<u1", 5121, "VEC4")
    weights = t.accessor([[1, 0, 0, 0]] * 4, "<f4", 5126, "VEC4")
    idx = t.accessor([0, 1, 2, 0, 2, 3], "<u2", 5123, "SCALAR")
    t.json["meshes"] = [{"name": "Quad", "primitives": [
        {"attributes": {"POSITION": pos, "JOINTS_0": joints, "WEIGHTS_0": weights}, "indices": idx}]}]
    t.json["skins"] = [{"joints": [0]}, {"joints": [1]}]
    t.json["nodes"] = [{"translation": [1.0, 0.0, 0.0]}, {"translation": [0.0, 3.0, 0.0]},
                       {"mesh": 0, "skin": 0}, {"mesh": 0, "skin": 1}]
    t.json["scenes"] = [{"nodes": [0, 1, 2, 3]}]
    t.json["scene"] = 0
    return t.gltf(folder, name)
