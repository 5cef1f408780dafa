# SPDX-License-Identifier: GPL-3.0-or-later
"""The binary FBX structure walk: Blender's own FBX passes, corrupt structure is refused fast.

Measured before the walk (bpy 5.0.1, 3 KB files, header 7400 + random body):
Blender's importer took 6 to 25 s per file and one hit a 6 GB address-space cap
(MemoryError); users saw 30-70 s and 14.5 GB.  The walk refuses each in
well under a millisecond, before the importer runs.
"""

from __future__ import annotations

import struct
import time

import pytest

from skin_audit.core.fbx_check import MAGIC, fbx_structure_problem
from tests.hostile.gltf_files import random_body_fbx


def _record(name: bytes, props: bytes, count: int, children: bytes = b"", at: int = 27) -> bytes:
    head = 13 + len(name)
    end = at + head + len(props) + len(children)
    return struct.pack("<IIIB", end, count, len(props), len(name)) + name + props + children


def _fbx(body: bytes, version: int = 7400) -> bytes:
    return MAGIC + struct.pack("<I", version) + body + b"\x00" * 13


def test_random_bodies_are_refused_in_milliseconds(tmp_path):
    for seed in range(20):
        path = random_body_fbx(tmp_path / f"r{seed}.fbx", seed=seed)
        started = time.perf_counter()
        problem = fbx_structure_problem(path)
        assert problem, seed
        assert time.perf_counter() - started < 0.5


def test_a_sound_hand_made_file_passes_and_each_lie_is_named(tmp_path):
    good = _fbx(_record(b"Creator", b"S" + struct.pack("<I", 4) + b"test", 1))
    path = tmp_path / "x.fbx"
    path.write_bytes(good)
    assert fbx_structure_problem(path) == ""
    lies = {
        "claims 1000000000 properties": _fbx(_record(b"N", b"C\x01", 1_000_000_000)),
        "outside its parent": _fbx(struct.pack("<IIIB", 10**9, 0, 0, 1) + b"N"),
        "unknown property type": _fbx(_record(b"N", b"Q\x01", 1)),
        "compressed array claims": _fbx(_record(b"N", b"d" + struct.pack("<III", 10**9, 1, 4) + b"\x78\x9c\x03\x00",
                                                1)),
        "version 9999": _fbx(b"", version=9999),
    }
    for words, data in lies.items():
        path.write_bytes(data)
        assert words in fbx_structure_problem(path), words


def test_an_ascii_fbx_is_left_to_the_importer(tmp_path):
    path = tmp_path / "a.fbx"
    path.write_text("; FBX 7.4.0 project file\n", encoding="utf-8")
    assert fbx_structure_problem(path) == ""


@pytest.mark.blender
def test_blenders_own_fbx_export_passes(bpy, empty_scene, tmp_path):
    from tests.factories.blender_rigs import chain_rig

    chain_rig("Exported")
    path = tmp_path / "rig.fbx"
    bpy.ops.export_scene.fbx(filepath=str(path))
    assert path.stat().st_size > 1000
    assert fbx_structure_problem(path) == ""
