# SPDX-License-Identifier: GPL-3.0-or-later
"""The glTF reader refuses malformed skins, accessors and samplers with its own error, naming the
file, the object and the problem (exit 2 for the command line), never with a crash."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.gltf.animation import read_sampler
from skin_audit.core.gltf.document import GltfError, load_gltf, read_accessor
from skin_audit.core.gltf.skin import inverse_bind_matrices
from tests.core.test_gltf_reader import Tiny, _skinned


def test_inverse_bind_matrices_of_another_type_are_refused(tmp_path):
    t = Tiny()
    _skinned(t)
    t.json["skins"][0]["inverseBindMatrices"] = t.accessor(np.zeros((2, 4)), "<f4", 5126, "VEC4")
    doc = load_gltf(t.gltf(tmp_path))
    with pytest.raises(GltfError, match=r"tiny\.gltf: accessor \d+ \(skin 0.*\): must be MAT4 FLOAT, found VEC4 5126"):
        inverse_bind_matrices(doc, 0)


def test_a_byte_stride_shorter_than_an_element_is_refused(tmp_path):
    t = Tiny()
    view = t.view(np.zeros(24, dtype="<f4").tobytes(), stride=4)
    t.json["accessors"].append({"bufferView": view, "componentType": 5126, "count": 2, "type": "VEC3"})
    doc = load_gltf(t.gltf(tmp_path))
    with pytest.raises(GltfError, match=r"byteStride 4 is smaller than one element \(12 bytes\)"):
        read_accessor(doc, 0)


def test_sparse_indices_of_a_float_type_are_refused(tmp_path):
    t = Tiny()
    t.accessor([1.0, 2.0, 3.0], "<f4", 5126, "SCALAR")
    t.json["accessors"][0]["sparse"] = {"count": 1, "indices": {"bufferView": 0, "componentType": 5126},
                                        "values": {"bufferView": 0}}
    doc = load_gltf(t.gltf(tmp_path))
    with pytest.raises(GltfError, match=r"accessor 0 sparse: indices componentType 5126 must be 5121, 5123 or 5125"):
        read_accessor(doc, 0)


def test_a_sampler_with_too_few_outputs_is_refused(tmp_path):
    t = Tiny()
    times = t.accessor([0.0, 1.0, 2.0], "<f4", 5126, "SCALAR", min=[0.0], max=[2.0])
    values = t.accessor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "<f4", 5126, "VEC3")
    t.json["nodes"] = [{}]
    t.json["animations"] = [{"samplers": [{"input": times, "output": values}],
                             "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}]}]
    doc = load_gltf(t.gltf(tmp_path))
    with pytest.raises(GltfError, match=r"animation 0 sampler 0: output has 2 elements for 3 keys \(1 per key"):
        read_sampler(doc, 0, 0)


def _codes(tmp_path, t):
    from skin_audit.core.gltf.checks import file_checks

    return {f.code: f for f in file_checks(load_gltf(t.gltf(tmp_path)))}


def test_influence_findings_carry_their_documented_severity(tmp_path):
    t = Tiny()
    _skinned(t, weights=[[1.5, 0, 0, 0], [1, 0, 0, 0]])
    t.accessor([[0, 5, 0, 0], [1, 0, 0, 0]], "<u1", 5121, "VEC4")  # joint 5 of a two-joint skin
    t.json["meshes"][0]["primitives"][0]["attributes"]["JOINTS_0"] = len(t.json["accessors"]) - 1
    t.json["meshes"][0]["primitives"][0]["attributes"]["WEIGHTS_0"] = t.accessor(
        [[0.5, 0.5, 0, 0], [1.5, 0, 0, 0]], "<f4", 5126, "VEC4")
    codes = _codes(tmp_path, t)
    assert codes["gltf-joint-out-of-range"].severity == "ERROR"
    assert codes["gltf-blender-clamps-weight"].severity == "WARNING"
    assert "Blender's glTF importer clamps it to 1" in codes["gltf-blender-clamps-weight"].message


def test_a_rotation_key_off_unit_length_is_an_error(tmp_path):
    t = Tiny()
    _skinned(t)
    times = t.accessor([0.0, 1.0], "<f4", 5126, "SCALAR", min=[0.0], max=[1.0])
    keys = t.accessor([[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 2.0]], "<f4", 5126, "VEC4")
    t.json["animations"] = [{"samplers": [{"input": times, "output": keys}],
                             "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}]}]
    assert _codes(tmp_path, t)["gltf-rotation-not-unit"].severity == "ERROR"


def test_undecodable_draco_data_on_a_later_primitive_is_found(tmp_path):
    t = Tiny()
    _skinned(t)
    first = t.json["meshes"][0]["primitives"][0]
    bad = t.view(b"NOT DRACO DATA")
    t.json["meshes"][0]["primitives"].append(
        {**first, "extensions": {"KHR_draco_mesh_compression": {"bufferView": bad, "attributes": {}}}})
    f = _codes(tmp_path, t)["gltf-draco-undecodable"]
    assert f.code == "gltf-draco-undecodable"
