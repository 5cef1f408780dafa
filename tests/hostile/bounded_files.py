# SPDX-License-Identifier: GPL-3.0-or-later
"""glTF files that point the reader (or Blender's importer) at things that never end, built in code.

Each starts from ``gltf_files.skinned_quad_gltf`` (a valid skinned quad, one embedded
buffer) and adds what the test needs: an extra buffer whose uri is a FIFO, a device or a
path outside the folder, an animation with negative key times, a Draco extension.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tests.hostile.gltf_files import skinned_quad_gltf

#: Seconds a safety writer waits before opening a FIFO that a broken reader would block on for ever.
FIFO_RESCUE_SECONDS = 20.0


def _doc(path: Path) -> dict:
    return json.loads(skinned_quad_gltf(path).read_text(encoding="utf-8"))


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _blob(doc: dict) -> bytearray:
    return bytearray(base64.b64decode(doc["buffers"][0]["uri"].split(",", 1)[1]))


def _set_blob(doc: dict, blob: bytearray) -> None:
    doc["buffers"][0] = {"byteLength": len(blob),
                         "uri": "data:application/octet-stream;base64," + base64.b64encode(bytes(blob)).decode()}


def with_extra_buffer(path: Path, uri: str, used: bool = False) -> Path:
    """The quad plus a 48-byte buffer 1 at ``uri``; ``used``: a morph target of the skinned
    primitive (4 zero displacements) is read from it, so the audit and the importer read it."""
    doc = _doc(path)
    doc["buffers"].append({"byteLength": 48, "uri": uri})
    if used:
        doc["bufferViews"].append({"buffer": 1, "byteLength": 48})
        doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5126, "count": 4,
                                 "type": "VEC3"})
        doc["meshes"][0]["primitives"][0]["targets"] = [{"POSITION": len(doc["accessors"]) - 1}]
        doc["meshes"][0]["weights"] = [0.0]
    return _write(path, doc)


def with_negative_key_times(path: Path, times: tuple[float, ...] = (-0.5, -0.25, 0.0, 1.0)) -> Path:
    """The quad with a rotation animation of its tip joint whose first keys are before 0."""
    doc = _doc(path)
    blob = _blob(doc)
    t = np.asarray(times, dtype=np.float32)
    q = np.tile(np.array([0, 0, 0, 1], dtype=np.float32), (len(t), 1))
    for data, kind in ((t, "SCALAR"), (q, "VEC4")):
        while len(blob) % 4:
            blob.append(0)
        offset = len(blob)
        blob.extend(data.tobytes())
        doc["bufferViews"].append({"buffer": 0, "byteOffset": offset, "byteLength": data.nbytes})
        acc = {"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5126, "count": len(t), "type": kind}
        if kind == "SCALAR":
            acc.update(min=[float(t.min())], max=[float(t.max())])
        doc["accessors"].append(acc)
    _set_blob(doc, blob)
    n = len(doc["accessors"])
    doc["animations"] = [{"name": "Early", "samplers": [{"input": n - 2, "output": n - 1}],
                          "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}]}]
    return _write(path, doc)


def with_draco(path: Path, payload: bytes) -> Path:
    """The quad whose primitive also carries KHR_draco_mesh_compression data ``payload`` (used, not
    required: the plain attributes are the fallback)."""
    doc = _doc(path)
    blob = _blob(doc)
    offset = len(blob)
    blob.extend(payload)
    doc["bufferViews"].append({"buffer": 0, "byteOffset": offset, "byteLength": len(payload)})
    _set_blob(doc, blob)
    doc["meshes"][0]["primitives"][0]["extensions"] = {"KHR_draco_mesh_compression": {
        "bufferView": len(doc["bufferViews"]) - 1, "attributes": {"POSITION": 0, "JOINTS_0": 1, "WEIGHTS_0": 2}}}
    doc["extensionsUsed"] = ["KHR_draco_mesh_compression"]
    return _write(path, doc)


def with_inverse_binds_short(path: Path, joints: int) -> Path:
    """A chain of ``joints`` joints whose inverseBindMatrices accessor holds one matrix too few."""
    doc = _doc(path)
    blob = _blob(doc)
    first = len(doc["nodes"])
    doc["nodes"][1]["children"] = [2]
    doc["nodes"][2]["children"] = [first] if joints > 2 else []
    for j in range(joints - 2):
        node = {"name": f"J{j}", "translation": [0.0, 0.01, 0.0]}
        if j < joints - 3:
            node["children"] = [first + j + 1]
        doc["nodes"].append(node)
    ibm = np.tile(np.eye(4, dtype=np.float32).reshape(1, 16), (joints - 1, 1))
    offset = len(blob)
    blob.extend(ibm.tobytes())
    doc["bufferViews"].append({"buffer": 0, "byteOffset": offset, "byteLength": ibm.nbytes})
    doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5126,
                             "count": joints - 1, "type": "MAT4"})
    _set_blob(doc, blob)
    doc["skins"] = [{"joints": [1, 2, *range(first, first + joints - 2)],
                     "inverseBindMatrices": len(doc["accessors"]) - 1}]
    return _write(path, doc)


@contextlib.contextmanager
def fifo(path: Path, rescue: bytes = b"") -> Iterator[Path]:
    """A FIFO at ``path``.  If a reader still blocks on it after FIFO_RESCUE_SECONDS (broken code),
    a writer opens it, writes ``rescue`` and closes it, so the reader wakes and the test fails
    instead of hanging."""
    os.mkfifo(path)
    done = threading.Event()

    def rescuer() -> None:
        if done.wait(FIFO_RESCUE_SECONDS):
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # nobody is reading: nothing to rescue
            return
        try:
            os.write(fd, rescue)
        except OSError:
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=rescuer, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        done.set()
        thread.join(FIFO_RESCUE_SECONDS + 5)
