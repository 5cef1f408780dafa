# SPDX-License-Identifier: GPL-3.0-or-later
"""Morph animation and integer weights read from a tiny glTF file, by hand.

Morphing comes before skinning (glTF 2.0 3.7.2.2): ``p = POSITION + sum_i w_i * target_i``,
the weights the node's (else the mesh's), replaced by an animation channel on the node's
``weights`` path.  Normalised UNSIGNED_BYTE weights are dequantised (c / 255); three.js divides
them by their absolute sum and writes them back into bytes (``Math.round(x * 255) / 255``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from skin_audit.core.engines.gltf_path import gltf_engine_positions
from skin_audit.core.engines.targets import GLTF, THREEJS
from skin_audit.core.gltf.document import GltfError, load_gltf
from skin_audit.core.gltf.morph import morph_weights, morphed_positions
from skin_audit.core.gltf.skin import skinned_primitives
from tests.core.test_gltf_reader import Tiny, _skinned

REST = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
# Two morph targets: the first moves vertex 0 by +x, the second vertex 0 by +2y and vertex 1 by +3z.
TARGET_0 = [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
TARGET_1 = [[0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]


def _morphing(t: Tiny, node_weights: list[float] | None = None, mesh_weights: list[float] | None = None) -> None:
    """Node 0: a mesh with two morph targets, skinned to node 1 (a joint at the origin, no IBM).

    Node 2 is a plain node (not a joint, no mesh) so channels on other nodes can be added.
    """
    pos = t.accessor(REST, "<f4", 5126, "VEC3")
    joints = t.accessor([[0, 0, 0, 0], [0, 0, 0, 0]], "<u1", 5121, "VEC4")
    weights = t.accessor([[1, 0, 0, 0], [1, 0, 0, 0]], "<f4", 5126, "VEC4")
    d0 = t.accessor(TARGET_0, "<f4", 5126, "VEC3")
    d1 = t.accessor(TARGET_1, "<f4", 5126, "VEC3")
    mesh: dict[str, Any] = {"primitives": [{
        "attributes": {"POSITION": pos, "JOINTS_0": joints, "WEIGHTS_0": weights},
        "targets": [{"POSITION": d0}, {"POSITION": d1}],
    }]}
    if mesh_weights is not None:
        mesh["weights"] = mesh_weights
    t.json["meshes"] = [mesh]
    t.json["skins"] = [{"joints": [1]}]
    node: dict[str, Any] = {"mesh": 0, "skin": 0}
    if node_weights is not None:
        node["weights"] = node_weights
    t.json["nodes"] = [node, {}, {}]


def _channel(t: Tiny, times: list[float], values: list[float], node: int, path: str,
             interpolation: str = "LINEAR", kind: str = "SCALAR") -> None:
    """A channel (and its sampler) added to animation 0."""
    anims = t.json.setdefault("animations", [{"channels": [], "samplers": []}])
    a = anims[0]
    inp = t.accessor(times, "<f4", 5126, "SCALAR", min=[min(times)], max=[max(times)])
    width = {"SCALAR": 1, "VEC3": 3}[kind]
    out = t.accessor(np.asarray(values).reshape(-1, width) if width > 1 else values, "<f4", 5126, kind)
    a["samplers"].append({"input": inp, "output": out, "interpolation": interpolation})
    a["channels"].append({"sampler": len(a["samplers"]) - 1, "target": {"node": node, "path": path}})


def _one(tmp_path, t: Tiny):
    doc = load_gltf(t.gltf(tmp_path))
    (prim,) = skinned_primitives(doc)
    return doc, prim


# --- default weights ---------------------------------------------------------------------------


def test_the_mesh_weights_are_the_default_and_a_target_at_weight_one_moves_in_full(tmp_path):
    t = Tiny()
    _morphing(t, mesh_weights=[1.0, 0.5])
    doc, prim = _one(tmp_path, t)
    w = morph_weights(doc, prim, None, None)
    np.testing.assert_array_equal(w, [1.0, 0.5])
    # Vertex 0: (1, 0, 0) + 1 (1, 0, 0) + 0.5 (0, 2, 0) = (2, 1, 0); vertex 1: (0, 1, 0) + 0.5 (0, 0, 3).
    np.testing.assert_allclose(morphed_positions(prim, w), [[2.0, 1.0, 0.0], [0.0, 1.0, 1.5]])
    # Each target alone, at weight 1: the rest plus the target.
    np.testing.assert_allclose(morphed_positions(prim, np.array([1.0, 0.0])), [[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(morphed_positions(prim, np.array([0.0, 1.0])), [[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])


def test_the_node_weights_win_over_the_mesh_weights(tmp_path):
    t = Tiny()
    _morphing(t, node_weights=[0.0, 1.0], mesh_weights=[1.0, 0.5])
    doc, prim = _one(tmp_path, t)
    np.testing.assert_array_equal(morph_weights(doc, prim, None, None), [0.0, 1.0])


def test_without_animation_or_time_the_defaults_are_returned_as_a_copy(tmp_path):
    t = Tiny()
    _morphing(t, mesh_weights=[0.25, 0.75])
    _channel(t, [0.0, 1.0], [1.0, 1.0, 1.0, 1.0], 0, "weights")
    doc, prim = _one(tmp_path, t)
    np.testing.assert_array_equal(morph_weights(doc, prim, 0, None), [0.25, 0.75])
    np.testing.assert_array_equal(morph_weights(doc, prim, None, 0.5), [0.25, 0.75])
    w = morph_weights(doc, prim, None, None)
    w[0] = 9.0
    np.testing.assert_array_equal(prim.morph_weights, [0.25, 0.75])


# --- animated weights --------------------------------------------------------------------------


def _animated(tmp_path, interpolation: str = "LINEAR"):
    """Weights keyed (0, 0) at t = 0 and (1, 0.5) at t = 1 on node 0; decoys on other targets.

    Before the node-0 channel: a translation channel on node 2 (not a weights path) and a
    weights channel on node 2 (another node), each with values that would show if read.
    """
    t = Tiny()
    _morphing(t, mesh_weights=[0.25, 0.75])
    _channel(t, [0.0, 1.0], [5.0, 5.0, 5.0, 5.0, 5.0, 5.0], 2, "translation", kind="VEC3")
    _channel(t, [0.0, 1.0], [7.0, 7.0, 7.0, 7.0], 2, "weights")
    if interpolation == "CUBICSPLINE":
        # Per key: in-tangents (2), values (2), out-tangents (2); tangents zero.
        _channel(t, [0.0, 1.0], [0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0.5, 0, 0], 0, "weights", "CUBICSPLINE")
    else:
        _channel(t, [0.0, 1.0], [0.0, 0.0, 1.0, 0.5], 0, "weights", interpolation)
    return _one(tmp_path, t)


@pytest.mark.parametrize(("time", "expected"), [(0.0, [0.0, 0.0]), (0.5, [0.5, 0.25]), (0.25, [0.25, 0.125]),
                                                (1.0, [1.0, 0.5]), (3.0, [1.0, 0.5])])
def test_a_linear_weights_channel_replaces_the_defaults(tmp_path, time, expected):
    doc, prim = _animated(tmp_path)
    np.testing.assert_allclose(morph_weights(doc, prim, 0, time), expected, atol=1e-7)


def test_a_step_weights_channel_holds_the_earlier_key(tmp_path):
    doc, prim = _animated(tmp_path, "STEP")
    np.testing.assert_allclose(morph_weights(doc, prim, 0, 0.75), [0.0, 0.0])
    np.testing.assert_allclose(morph_weights(doc, prim, 0, 1.0), [1.0, 0.5])


def test_a_cubic_spline_weights_channel_reads_three_values_per_target_per_key(tmp_path):
    doc, prim = _animated(tmp_path, "CUBICSPLINE")
    # Zero tangents: the Hermite basis at s = 1/2 weighs each key 1/2.
    np.testing.assert_allclose(morph_weights(doc, prim, 0, 0.5), [0.5, 0.25], atol=1e-7)
    np.testing.assert_allclose(morph_weights(doc, prim, 0, 1.0), [1.0, 0.5], atol=1e-7)


def test_the_engine_path_morphs_with_the_clip_at_the_time_before_skinning(tmp_path):
    doc, prim = _animated(tmp_path)
    (out,) = gltf_engine_positions(doc, GLTF, 0, 0.5)
    # Weights (0.5, 0.25); the joint does not move: vertex 0 = (1, 0, 0) + 0.5 (1, 0, 0) + 0.25 (0, 2, 0).
    np.testing.assert_allclose(out.positions, [[1.5, 0.5, 0.0], [0.0, 1.0, 0.75]], atol=1e-6)
    (rest,) = gltf_engine_positions(doc, GLTF)
    # At rest: the mesh's weights (0.25, 0.75).
    np.testing.assert_allclose(rest.positions, [[1.25, 1.5, 0.0], [0.0, 1.0, 2.25]], atol=1e-6)


def test_a_weights_channel_with_a_bad_sampler_or_value_count_is_refused(tmp_path):
    t = Tiny()
    _morphing(t)
    _channel(t, [0.0, 1.0], [0.0, 0.0, 1.0], 0, "weights")  # 3 values for 2 keys x 2 targets
    doc, prim = _one(tmp_path, t)
    with pytest.raises(GltfError, match=r"animation 0 channel 0.*weights output has 3 values for 2 keys and 2 targets"):
        morph_weights(doc, prim, 0, 0.5)
    t.json["animations"][0]["channels"][0]["sampler"] = 1
    doc, prim = _one(tmp_path, t)
    with pytest.raises(GltfError, match=r"animation 0 channel 0.*sampler 1 is out of range \(1 samplers\)"):
        morph_weights(doc, prim, 0, 0.5)
    t.json["animations"][0]["channels"][0]["sampler"] = -1
    doc, prim = _one(tmp_path, t)
    with pytest.raises(GltfError, match=r"sampler -1 is out of range"):
        morph_weights(doc, prim, 0, 0.5)


# --- integer weights through the engine path ------------------------------------------------


def test_unsigned_byte_weights_are_requantised_by_a_target_that_requantises(tmp_path):
    t = Tiny()
    _skinned(t)
    # Vertex 0 stores bytes (3, 4): 3/255 and 4/255, summing to 7/255.
    w = t.accessor([[3, 4, 0, 0], [255, 0, 0, 0]], "<u1", 5121, "VEC4", normalized=True)
    t.json["meshes"][0]["primitives"][0]["attributes"]["WEIGHTS_0"] = w
    doc = load_gltf(t.gltf(tmp_path))
    # Joint 0 (slot 0) turns 90 deg about z: (1, 0, 0) -> (0, 1, 0); joint 1 adds (-1, 0, 0).
    # three.js: 3/7 and 4/7, then round(255 x) / 255: 109.29 -> 109, 145.71 -> 146.
    w0, w1 = 109 / 255, 146 / 255
    (three,) = gltf_engine_positions(doc, THREEJS)
    np.testing.assert_allclose(three.positions[0], [-w1, w0 + w1, 0.0], atol=1e-9)
    np.testing.assert_allclose(three.positions[1], [-2.0, 1.0, 0.0], atol=1e-6)
    # Without the requantisation it would be 4/7: a difference the test can see.
    assert not math.isclose(w1, 4 / 7, abs_tol=1e-4)
    # The spec's reference draws the weights as stored (3/255, 4/255), not normalised.
    (spec,) = gltf_engine_positions(doc, GLTF)
    np.testing.assert_allclose(spec.positions[0], [-4 / 255, 7 / 255, 0.0], atol=1e-7)


def test_a_weights_channel_of_an_animation_without_samplers_is_refused(tmp_path):
    t = Tiny()
    _morphing(t)
    t.json["animations"] = [{"channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}]}]
    doc, prim = _one(tmp_path, t)
    with pytest.raises(GltfError, match=r"animation 0 channel 0.*sampler 0 is out of range \(0 samplers\)"):
        morph_weights(doc, prim, 0, 0.5)
