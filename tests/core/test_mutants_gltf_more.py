# SPDX-License-Identifier: GPL-3.0-or-later
"""glTF maths and reads by hand: a quarter turn about x, a squash with three distinct singular
values, a STEP sampler read from a file, an absolute uri."""

from __future__ import annotations

import json
import math

import numpy as np

from skin_audit.core.gltf.animation import read_sampler
from skin_audit.core.gltf.document import _uri_leaves_folder, load_gltf, read_accessor, uri_problems
from skin_audit.core.gltf.scene import quaternion_matrices
from tests.core.test_gltf_reader import Tiny
from tests.factories.collapse import squash_measures


def test_a_quarter_turn_about_x():
    s = math.sin(math.pi / 4)
    (m,) = quaternion_matrices(np.array([[s, 0.0, 0.0, s]]), "normalise")
    # y -> z, z -> -y (right-handed, column vectors).
    np.testing.assert_allclose(m, [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-15)


def test_the_smallest_of_three_distinct_singular_values():
    linear = np.array([np.diag([3.0, 2.0, 0.5]) * 2.0])  # contribution 2: the blend divides by it
    smallest, det = squash_measures(linear, np.array([2.0]))
    np.testing.assert_allclose(smallest, [0.5])
    np.testing.assert_allclose(det, [3.0])


def test_a_step_sampler_keeps_its_interpolation(tmp_path):
    t = Tiny()
    times = t.accessor([0.0, 1.0], "<f4", 5126, "SCALAR", min=[0.0], max=[1.0])
    values = t.accessor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "<f4", 5126, "VEC3")
    t.json["nodes"] = [{}]
    t.json["animations"] = [{"samplers": [{"input": times, "output": values, "interpolation": "STEP"}],
                             "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}]}]
    assert read_sampler(load_gltf(t.gltf(tmp_path)), 0, 0).interpolation == "STEP"


def test_an_absolute_uri_leaves_the_folder():
    assert _uri_leaves_folder("textures/a.png") is False
    assert _uri_leaves_folder("/etc/passwd") == "NON_RELATIVE_URI"  # the glTF validator's code


def test_a_buffer_beside_the_gltf_is_read(tmp_path):
    t = Tiny()
    t.accessor([1.5, -2.0, 4.0], "<f4", 5126, "SCALAR")
    path = t.gltf(tmp_path)
    (tmp_path / "tiny.bin").write_bytes(bytes(t.data))
    t.json["buffers"] = [{"byteLength": len(t.data), "uri": "tiny.bin"}]
    path.write_text(json.dumps(t.json))
    np.testing.assert_array_equal(read_accessor(load_gltf(path), 0)[:, 0], [1.5, -2.0, 4.0])


def test_uri_problems_name_the_validator_code():
    found = uri_problems({"buffers": [{"uri": "a.bin"}], "images": [{"uri": "/tmp/x.png"}]})
    assert [(p.kind, p.index, p.uri, p.validator_code) for p in found] == [
        ("images", 0, "/tmp/x.png", "NON_RELATIVE_URI")]


def test_a_buffer_view_without_byte_offset_starts_at_zero(tmp_path):
    # byteOffset is optional (glTF 2.0 3.6.1.1, default 0): a file that leaves it out is valid.
    t = Tiny()
    t.accessor([7.0, 8.0], "<f4", 5126, "SCALAR")
    del t.json["bufferViews"][0]["byteOffset"]
    np.testing.assert_array_equal(read_accessor(load_gltf(t.gltf(tmp_path)), 0)[:, 0], [7.0, 8.0])


def test_two_influence_sets_sit_side_by_side(tmp_path):
    from skin_audit.core.engines.gltf_path import stacked_influences
    from skin_audit.core.gltf.skin import skinned_primitives
    from tests.core.test_gltf_reader import _skinned

    t = Tiny()
    _skinned(t, weights=[[0.5, 0.25, 0, 0], [1, 0, 0, 0]])
    attributes = t.json["meshes"][0]["primitives"][0]["attributes"]
    attributes["JOINTS_1"] = t.accessor([[1, 0, 0, 0], [0, 0, 0, 0]], "<u1", 5121, "VEC4")
    attributes["WEIGHTS_1"] = t.accessor([[0.25, 0, 0, 0], [0, 0, 0, 0]], "<f4", 5126, "VEC4")
    (prim,) = skinned_primitives(load_gltf(t.gltf(tmp_path)))
    joints, weights, ctype = stacked_influences(prim)
    assert joints.tolist() == [[0, 1, 0, 0, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0]]
    np.testing.assert_array_equal(weights, [[0.5, 0.25, 0, 0, 0.25, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0]])
    assert ctype == 5126
