# SPDX-License-Identifier: GPL-3.0-or-later
"""The glTF reader and engine targets on tiny files built here, against hand-computed values."""

from __future__ import annotations

import base64
import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skin_audit.core.engines.gltf_path import gltf_engine_positions
from skin_audit.core.engines.targets import GLTF, RAW, THREEJS, UNITY, get_target
from skin_audit.core.engines.weights import deform, engine_weights
from skin_audit.core.errors import InputError
from skin_audit.core.gltf.animation import Sampler, animated_transforms, sample
from skin_audit.core.gltf.checks import file_checks
from skin_audit.core.gltf.document import GltfError, as_matrices, load_gltf, read_accessor, read_accessor_stored
from skin_audit.core.gltf.scene import local_matrices, rest_transforms
from skin_audit.core.gltf.skin import joint_matrices, pose_at, skinned_primitives


class Tiny:
    """A glTF built in memory: one buffer, accessors added one by one."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.json: dict[str, Any] = {"asset": {"version": "2.0"}, "accessors": [], "bufferViews": [], "buffers": []}

    def view(self, raw: bytes, stride: int | None = None) -> int:
        while len(self.data) % 4:
            self.data.append(0)
        v: dict[str, Any] = {"buffer": 0, "byteOffset": len(self.data), "byteLength": len(raw)}
        if stride:
            v["byteStride"] = stride
        self.data += raw
        self.json["bufferViews"].append(v)
        return len(self.json["bufferViews"]) - 1

    def accessor(self, values: Any, dtype: str, ctype: int, kind: str, **extra: Any) -> int:
        arr = np.asarray(values, dtype=dtype)
        view = self.view(arr.tobytes())
        acc = {"bufferView": view, "componentType": ctype, "count": len(arr), "type": kind, **extra}
        self.json["accessors"].append(acc)
        return len(self.json["accessors"]) - 1

    def gltf(self, folder: Path, name: str = "tiny.gltf") -> Path:
        uri = "data:application/octet-stream;base64," + base64.b64encode(bytes(self.data)).decode()
        self.json["buffers"] = [{"byteLength": len(self.data), "uri": uri}]
        path = folder / name
        path.write_text(json.dumps(self.json))
        return path

    def glb(self, folder: Path, name: str = "tiny.glb") -> Path:
        self.json["buffers"] = [{"byteLength": len(self.data)}]
        js = json.dumps(self.json).encode()
        js += b" " * (-len(js) % 4)
        binary = bytes(self.data) + bytes(-len(self.data) % 4)
        body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(binary), 0x004E4942) + binary
        path = folder / name
        path.write_bytes(struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body)
        return path


# --- accessors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "ctype", "stored", "normalised"),
    [
        ("<i1", 5120, [-128, -127, 0, 127], [-1.0, -1.0, 0.0, 1.0]),  # max(c / 127, -1)
        ("<u1", 5121, [0, 1, 128, 255], [0.0, 1 / 255, 128 / 255, 1.0]),
        ("<i2", 5122, [-32768, -32767, 1, 32767], [-1.0, -1.0, 1 / 32767, 1.0]),
        ("<u2", 5123, [0, 1, 32768, 65535], [0.0, 1 / 65535, 32768 / 65535, 1.0]),
    ],
)
def test_every_integer_type_as_stored_and_dequantised(tmp_path, dtype, ctype, stored, normalised):
    t = Tiny()
    plain = t.accessor(stored, dtype, ctype, "SCALAR")
    norm = t.accessor(stored, dtype, ctype, "SCALAR", normalized=True)
    doc = load_gltf(t.gltf(tmp_path))
    np.testing.assert_array_equal(read_accessor(doc, plain)[:, 0], stored)
    np.testing.assert_array_equal(read_accessor_stored(doc, norm)[:, 0], stored)
    np.testing.assert_allclose(read_accessor(doc, norm)[:, 0], normalised, rtol=0, atol=1e-15)


def test_uint_and_float_and_glb(tmp_path):
    t = Tiny()
    u = t.accessor([0, 4_000_000_000], "<u4", 5125, "SCALAR")
    f = t.accessor([[0.5, -2.0, 1e-3]], "<f4", 5126, "VEC3")
    for path in (t.gltf(tmp_path), t.glb(tmp_path)):
        doc = load_gltf(path)
        assert read_accessor(doc, u)[:, 0].tolist() == [0, 4_000_000_000]
        np.testing.assert_array_equal(read_accessor(doc, f), np.float32([[0.5, -2.0, 1e-3]]))


def test_byte_stride_interleaved(tmp_path):
    # Two VEC2 float attributes interleaved in one 16-byte-stride view.
    t = Tiny()
    a = np.array([[1, 2], [3, 4], [5, 6]], "<f4")
    b = np.array([[10, 20], [30, 40], [50, 60]], "<f4")
    view = t.view(np.hstack([a, b]).tobytes(), stride=16)
    t.json["accessors"] += [
        {"bufferView": view, "componentType": 5126, "count": 3, "type": "VEC2"},
        {"bufferView": view, "byteOffset": 8, "componentType": 5126, "count": 3, "type": "VEC2"},
    ]
    doc = load_gltf(t.gltf(tmp_path))
    np.testing.assert_array_equal(read_accessor(doc, 0), a)
    np.testing.assert_array_equal(read_accessor(doc, 1), b)


def test_matrix_columns_padded_to_four_bytes(tmp_path):
    # MAT2 of unsigned bytes: each 2-byte column is padded to 4 bytes (3.6.2.4).
    t = Tiny()
    view = t.view(bytes([1, 2, 0, 0, 3, 4, 0, 0]))
    t.json["accessors"].append({"bufferView": view, "componentType": 5121, "count": 1, "type": "MAT2"})
    m4 = t.accessor(np.arange(16).reshape(1, 16), "<f4", 5126, "MAT4")
    doc = load_gltf(t.gltf(tmp_path))
    assert read_accessor(doc, 0).tolist() == [[1, 2, 3, 4]]
    mat = as_matrices(read_accessor(doc, m4))[0]
    assert mat[0, 1] == 4 and mat[1, 0] == 1  # column-major in the file: element 1 is row 1, column 0


def test_sparse_on_a_view_and_on_zeros(tmp_path):
    t = Tiny()
    base = t.accessor([1.0, 2.0, 3.0, 4.0], "<f4", 5126, "SCALAR")
    idx = t.view(np.array([1, 3], "<u2").tobytes())
    val = t.view(np.array([20.0, 40.0], "<f4").tobytes())
    sparse = {"count": 2, "indices": {"bufferView": idx, "componentType": 5123}, "values": {"bufferView": val}}
    t.json["accessors"][base]["sparse"] = sparse
    t.json["accessors"].append({"componentType": 5126, "count": 5, "type": "SCALAR", "sparse": sparse})
    doc = load_gltf(t.gltf(tmp_path))
    assert read_accessor(doc, base)[:, 0].tolist() == [1, 20, 3, 40]
    assert read_accessor(doc, 1)[:, 0].tolist() == [0, 20, 0, 40, 0]


# --- malformed input -------------------------------------------------------------------------


def test_errors_name_file_object_and_problem(tmp_path):
    t = Tiny()
    t.accessor([1.0, 2.0], "<f4", 5126, "SCALAR")
    t.json["accessors"].append({"bufferView": 0, "componentType": 5126, "count": 3, "type": "SCALAR"})
    doc = load_gltf(t.gltf(tmp_path))
    with pytest.raises(GltfError, match=r"tiny\.gltf: accessor 1.*run past the end of bufferView 0"):
        read_accessor(doc, 1)
    with pytest.raises(GltfError, match=r"refers to accessors 7, but the file has 2"):
        read_accessor(doc, 7, "mesh 0 primitive 0 POSITION")
    assert issubclass(GltfError, InputError)

    glb = t.glb(tmp_path)
    raw = glb.read_bytes()
    (tmp_path / "magic.glb").write_bytes(b"glTX" + raw[4:])
    with pytest.raises(GltfError, match="magic"):
        load_gltf(tmp_path / "magic.glb")
    (tmp_path / "short.glb").write_bytes(raw[:-8])
    with pytest.raises(GltfError, match="truncated GLB"):
        load_gltf(tmp_path / "short.glb")


def _skinned(t: Tiny, ibm: np.ndarray | None = None, weights: Any = None) -> None:
    """Two joints (node 1 at the origin, node 2 its child at y = 1) skinning node 0's mesh."""
    pos = t.accessor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]], "<f4", 5126, "VEC3")
    joints = t.accessor([[0, 1, 0, 0], [1, 0, 0, 0]], "<u1", 5121, "VEC4")
    w = t.accessor(weights if weights is not None else [[0.5, 0.5, 0, 0], [1, 0, 0, 0]], "<f4", 5126, "VEC4")
    t.json["meshes"] = [{"primitives": [{"attributes": {"POSITION": pos, "JOINTS_0": joints, "WEIGHTS_0": w}}]}]
    skin: dict[str, Any] = {"joints": [1, 2]}
    if ibm is not None:
        skin["inverseBindMatrices"] = t.accessor(ibm.transpose(0, 2, 1).reshape(-1, 16), "<f4", 5126, "MAT4")
    t.json["skins"] = [skin]
    # The mesh node has a transform of its own: 3.7.3.3 says it is ignored when skinning.
    t.json["nodes"] = [
        {"mesh": 0, "skin": 0, "translation": [100.0, 0.0, 0.0]},
        {"children": [2], "rotation": [0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]},
        {"translation": [0.0, 1.0, 0.0]},
    ]


def test_non_finite_inverse_bind_matrix_is_an_error(tmp_path):
    t = Tiny()
    ibm = np.tile(np.eye(4), (2, 1, 1))
    ibm[1, 0, 3] = np.nan
    _skinned(t, ibm)
    doc = load_gltf(t.gltf(tmp_path))
    with pytest.raises(GltfError, match=r"accessor \d+ \(skin 0 inverseBindMatrices\): 1 inverse bind.*slots \[1\]"):
        joint_matrices(doc, 0, pose_at(doc).world)


# --- skins -------------------------------------------------------------------------------------


def test_skin_without_inverse_bind_matrices_uses_identity_and_ignores_mesh_node(tmp_path):
    t = Tiny()
    _skinned(t)
    doc = load_gltf(t.gltf(tmp_path))
    world = pose_at(doc).world
    np.testing.assert_allclose(joint_matrices(doc, 0, world), world[[1, 2]], atol=1e-15)
    (out,) = gltf_engine_positions(doc, GLTF)
    # Joint 0 turns 90 deg about z; joint 1 is also lifted to y = 1 (in the rotated frame: x = -1).
    # Vertex 0 = 0.5 * R(1, 0, 0) + 0.5 * (R(1, 0, 0) + (-1, 0, 0)) = (-0.5, 1, 0); vertex 1 = R(1,1,0) + (-1,0,0).
    np.testing.assert_allclose(out.positions, [[-0.5, 1.0, 0.0], [-2.0, 1.0, 0.0]], atol=1e-6)


def test_inverse_bind_matrices_read_column_major(tmp_path):
    t = Tiny()
    ibm = np.tile(np.eye(4), (2, 1, 1))
    ibm[1, :3, 3] = [0.0, -1.0, 0.0]  # joint 1's bind: lifted to y = 1
    _skinned(t, ibm)
    doc = load_gltf(t.gltf(tmp_path))
    mats = joint_matrices(doc, 0, pose_at(doc).world)
    # world(joint 1) @ IBM_1 = R(z, 90): the lift cancels.
    np.testing.assert_allclose(mats[1], mats[0], atol=1e-7)


# --- animation ---------------------------------------------------------------------------------


def _q(axis_z_degrees: float) -> list[float]:
    h = math.radians(axis_z_degrees) / 2
    return [0.0, 0.0, math.sin(h), math.cos(h)]


def test_linear_translation_and_step():
    s = Sampler(np.array([0.0, 2.0]), np.array([[0.0, 0, 0], [4.0, 0, 0]]), "LINEAR")
    assert sample(s, 0.5, "translation").tolist() == [1.0, 0.0, 0.0]
    assert sample(s, -1.0, "translation").tolist() == [0.0, 0.0, 0.0]  # clamped before the first key
    assert sample(s, 9.0, "translation").tolist() == [4.0, 0.0, 0.0]
    step = Sampler(s.times, s.values, "STEP")
    assert sample(step, 1.999, "translation").tolist() == [0.0, 0.0, 0.0]
    assert sample(step, 2.0, "translation").tolist() == [4.0, 0.0, 0.0]


@pytest.mark.parametrize("rule", ["spec", "threejs"])
def test_linear_rotation_is_slerp_on_the_shorter_arc(rule):
    q1 = np.array(_q(90.0))
    for second in (q1, -q1):  # -q is the same rotation: the shorter arc gives the same answer
        s = Sampler(np.array([0.0, 1.0]), np.array([_q(0.0), second]), "LINEAR")
        got = sample(s, 0.5, "rotation", rule)
        np.testing.assert_allclose(got, _q(45.0), atol=1e-12)
        # Slerp, not lerp: a quarter of the way is 22.5 deg.
        np.testing.assert_allclose(sample(s, 0.25, "rotation", rule), _q(22.5), atol=1e-12)


def test_non_unit_keys_spec_normalises_threejs_uses_as_stored():
    keys = 0.5 * np.array([_q(0.0), _q(90.0)])
    s = Sampler(np.array([0.0, 1.0]), keys, "LINEAR")
    np.testing.assert_allclose(sample(s, 0.5, "rotation", "spec"), _q(45.0), atol=1e-12)
    # slerpFlat on the stored keys: d = 0.25 cos 45 < 0.9995, theta = acos(d), both weights sin(theta/2)/sin(theta).
    theta = math.acos(0.25 * math.cos(math.pi / 4))
    expected = math.sin(theta / 2) / math.sin(theta) * (keys[0] + keys[1])
    got = sample(s, 0.5, "rotation", "threejs")
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert abs(np.linalg.norm(got) - 1.0) > 0.1  # left unnormalised
    # Close keys (d >= 0.9995): lerp then normalise, so a unit result.
    near = Sampler(np.array([0.0, 1.0]), 2.0 * np.array([_q(0.0), _q(1.0)]), "LINEAR")
    np.testing.assert_allclose(np.linalg.norm(sample(near, 0.5, "rotation", "threejs")), 1.0, atol=1e-15)
    # And the node matrix: three.js's Matrix4.compose on the stored (0, 0, z, w) gives
    # [[1 - 2z^2, -2wz], [2wz, 1 - 2z^2]]; with z = 2 sin 15, w = 2 cos 15: 1 - 8 sin^2 15 and -4 sin 30.
    stored = sample_matrix(2.0 * np.array(_q(30.0)), "as_stored")
    c = 1 - 8 * math.sin(math.radians(15)) ** 2
    np.testing.assert_allclose(stored, [[c, -2.0, 0], [2.0, c, 0], [0, 0, 1]], atol=1e-12)
    assert abs(np.linalg.det(sample_matrix(2.0 * np.array(_q(30.0)), "normalise")) - 1.0) < 1e-12


def sample_matrix(q: np.ndarray, rule: str) -> np.ndarray:
    from skin_audit.core.gltf.scene import quaternion_matrices

    return quaternion_matrices(q[None, :], rule)[0]  # type: ignore[arg-type]


def test_cubicspline_hermite_by_hand():
    # Scalar-like VEC3 track: v0 = 0, out-tangent b0 = 1, in-tangent a1 = 0, v1 = 1, td = 2.
    # At u = 0.5: (2u^3-3u^2+1)*0 + td(u^3-2u^2+u)*1 + (-2u^3+3u^2)*1 + td(u^3-u^2)*0 = 0.25 + 0.5.
    values = np.array([[9, 9, 9], [0, 0, 0], [1, 1, 1], [0, 0, 0], [1, 1, 1], [9, 9, 9]], dtype=float)
    s = Sampler(np.array([0.0, 2.0]), values, "CUBICSPLINE")
    np.testing.assert_allclose(sample(s, 1.0, "translation"), [0.75] * 3, atol=1e-15)
    assert sample(s, 5.0, "translation").tolist() == [1.0, 1.0, 1.0]  # the value, not a tangent
    # A rotation spline is normalised after the Hermite blend.
    rot = np.array([[0, 0, 0, 0], _q(0.0), [0, 0, 0, 0], [0, 0, 0, 0], _q(90.0), [0, 0, 0, 0]])
    got = sample(Sampler(np.array([0.0, 1.0]), rot, "CUBICSPLINE"), 0.5, "rotation")
    np.testing.assert_allclose(np.linalg.norm(got), 1.0, atol=1e-15)
    np.testing.assert_allclose(got, _q(45.0), atol=1e-12)  # symmetric Hermite of two keys, zero tangents


def test_animation_file_with_clip_by_name(tmp_path):
    t = Tiny()
    _skinned(t)
    times = t.accessor([0.0, 1.0], "<f4", 5126, "SCALAR")
    rot = t.accessor([_q(0.0), _q(180.0)], "<f4", 5126, "VEC4")
    t.json["animations"] = [
        {"name": "idle", "samplers": [], "channels": []},
        {
            "name": "turn",
            "samplers": [{"input": times, "output": rot, "interpolation": "LINEAR"}],
            "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}],
        },
    ]
    doc = load_gltf(t.gltf(tmp_path))
    trs = animated_transforms(doc, rest_transforms(doc), 1, 0.5)
    np.testing.assert_allclose(trs.rotation[2], _q(90.0), atol=1e-7)
    np.testing.assert_allclose(local_matrices(trs)[2][:3, :3] @ [1, 0, 0], [0, 1, 0], atol=1e-7)
    assert pose_at(doc, "turn", 0.5).animation == 1
    with pytest.raises(GltfError, match="no animation named 'run'; the file has: 'idle', 'turn'"):
        pose_at(doc, "run", 0.5)


# --- engine targets on arrays ------------------------------------------------------------------


def test_threejs_weights_divide_by_sum_and_zero_gets_first_slot():
    joints = np.array([[3, 1, 2, 0], [5, 6, 7, 8], [1, 2, 0, 0], [0, 1, 2, 3]])
    weights = np.array([[0.2, 0.2, 0.4, 0.0], [0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.6, 0.6, 0.6, 0.6]])
    second = np.zeros((4, 4))
    second[:, 0] = 0.3  # a second set three.js never reads
    j, w = engine_weights(np.hstack([joints, joints]), np.hstack([weights, second]), THREEJS)
    assert j.shape == (4, 4)
    np.testing.assert_allclose(w[0], [0.25, 0.25, 0.5, 0.0])
    np.testing.assert_array_equal(w[1], [1.0, 0.0, 0.0, 0.0])  # "do something reasonable"
    np.testing.assert_allclose(w[3], [0.25] * 4)
    # Normalised bytes are written back as bytes: round(x * 255) / 255.
    _, wq = engine_weights(
        np.array([[0, 1, 2, 0]]), np.array([[100, 100, 100, 0]]) / 255, THREEJS, weight_component_type=5121
    )
    np.testing.assert_array_equal(wq * 255, [[85, 85, 85, 0]])


def test_raw_gltf_unity_rules():
    joints = np.array([[0, 1, 2, 3, 4]])
    weights = np.array([[0.1, 0.3, 0.0005, 0.2, 0.2]])
    _, w_raw = engine_weights(joints, weights, RAW, set_width=None)
    assert sorted(w_raw[0].tolist()) == [0.1, 0.2, 0.2, 0.3]  # four largest, not renormalised
    j_u, w_u = engine_weights(joints, weights, UNITY, set_width=None)
    np.testing.assert_allclose(w_u.sum(), 1.0)
    assert 2 not in j_u[0][w_u[0] > 0]  # below Unity's 0.001 cut
    _, w_g = engine_weights(joints, weights, GLTF, set_width=None)
    np.testing.assert_array_equal(w_g, weights)  # all influences, as stored
    with pytest.raises(InputError, match="unknown engine target 'cryengine'"):
        get_target("cryengine")


def test_deform_returns_non_finite_and_skips_unused_slots():
    mats = np.tile(np.eye(4), (2, 1, 1))
    mats[1, 0, 3] = np.inf
    rest = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    joints = np.array([[0, 1], [0, 1], [0, 9]])
    weights = np.array([[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]])
    out = deform(rest, joints, weights, mats, GLTF, set_width=None)
    np.testing.assert_array_equal(out[0], rest[0])  # an inf joint on an unused slot does no harm
    assert not np.isfinite(out[1]).all()  # a used inf joint is returned, not raised
    assert np.isnan(out[2]).all()  # a used joint past the skin
    zero = deform(rest[:1], joints[:1], np.zeros((1, 2)), mats, RAW, set_width=None)
    np.testing.assert_array_equal(zero, [[0.0, 0.0, 0.0]])  # raw: unweighted collapses to the origin


def test_file_checks_on_a_tiny_file(tmp_path):
    t = Tiny()
    _skinned(t, weights=[[0.5, 0.25, 0, 0], [1, 0, 0, 0]])
    doc = load_gltf(t.gltf(tmp_path))
    codes = {f.code: f for f in file_checks(doc)}
    assert codes["gltf-weights-not-normalised"].vertices == (0,)
    assert codes["gltf-weights-not-normalised"].details["validator_code"] == "ACCESSOR_WEIGHTS_NON_NORMALIZED"
    assert len(skinned_primitives(doc)) == 1


def test_blender_gltf_exporter_model():
    from skin_audit.core.engines.targets import BLENDER_GLTF_EXPORTER
    from skin_audit.core.engines.weights import exporter_weights
    from tests.factories.engine_reference import exported_deform

    joints = np.array([[0, 1, 2, 3, 4, 5], [0, 1, 0, 0, 0, 0]])
    weights = np.array([[0.05, 0.5, 0.00005, 0.3, 0.2, 0.1], [0.00009, 0.0, 0, 0, 0, 0]])
    j, w, neutral = exporter_weights(joints, weights, BLENDER_GLTF_EXPORTER)
    # Row 0: the 1e-4 cut, then the 4 largest (1, 3, 4, 5), divided by their sum 1.1 (float32).
    assert j[0].tolist() == [1, 3, 4, 5]
    np.testing.assert_allclose(w[0], np.float32([0.5, 0.3, 0.2, 0.1]) / np.float32(1.1), rtol=1e-7)
    # Row 1: nothing above 1e-4, so the neutral joint: it stays where it is at every pose.
    assert neutral.tolist() == [False, True]
    mats = np.tile(np.eye(4), (6, 1, 1))
    mats[:, :3, 3] = [5.0, 0.0, 0.0]
    out = exported_deform(np.zeros((2, 3)), joints, weights, mats, THREEJS)
    np.testing.assert_allclose(out, [[5.0, 0, 0], [0, 0, 0]], atol=1e-6)


def test_morph_targets_before_skinning_and_compressed_files_refused(tmp_path):
    t = Tiny()
    _skinned(t)
    delta = t.accessor([[0.0, 0.0, 1.0], [0.0, 0.0, 2.0]], "<f4", 5126, "VEC3")
    t.json["meshes"][0]["primitives"][0]["targets"] = [{"POSITION": delta}]
    t.json["meshes"][0]["weights"] = [0.5]
    t.json["nodes"][0]["weights"] = [0.25]  # the node's weights win over the mesh's (3.7.2.2)
    doc = load_gltf(t.gltf(tmp_path))
    (out,) = gltf_engine_positions(doc, GLTF)
    # Morphed rest: z = 0.25 and 0.5; the joints turn about z, so z is kept.
    np.testing.assert_allclose(out.positions[:, 2], [0.25, 0.5], atol=1e-7)
    t.json["extensionsRequired"] = ["KHR_draco_mesh_compression"]
    with pytest.raises(GltfError, match="requires KHR_draco_mesh_compression, which this reader does not decode"):
        load_gltf(t.gltf(tmp_path, "draco.gltf"))


def test_divergence_names_target_and_pose():
    from skin_audit.core.engines.divergence import divergence, divergence_by_pose, divergence_finding

    ref = np.zeros((3, 3))
    current = divergence([[0, 0, 0], [0, 0.5, 0], [0, 0, 0]], ref)
    bent = divergence([[0, 0, 0], [0, 0, 2.0], [np.nan, 0, 0]], ref)
    assert bent.tolist() == [0.0, 2.0, np.inf]  # no position at all is as far as it gets
    poses = {"current": current, "arm raised": bent}
    assert divergence_by_pose(poses) == {"current": 0.5, "arm raised": np.inf}
    f = divergence_finding(poses, size=10.0, relative=0.01, target=THREEJS, reference="Blender")
    assert f is not None and f.vertices == (1, 2)
    assert f.details["target"] == "threejs" and f.details["pose"] == "arm raised"
    assert "in threejs" in f.message and "verified against the real engine" in f.message
    assert divergence_finding({"current": current}, 10.0, 0.1, THREEJS, "Blender") is None


@pytest.mark.parametrize("interpolation", ["LINEAR", "STEP", "CUBICSPLINE"])
@pytest.mark.parametrize("path", ["rotation", "translation"])
@pytest.mark.parametrize("rule", ["spec", "threejs", "babylon"])
def test_sampling_every_time_at_once_is_sampling_each(interpolation, path, rule):
    from skin_audit.core.gltf.animation import sample_many

    rng = np.random.default_rng(3)
    times = np.cumsum(rng.uniform(0.1, 1.0, 6))
    width = 4 if path == "rotation" else 3
    values = rng.normal(size=(3 * 6 if interpolation == "CUBICSPLINE" else 6, width))
    if interpolation != "CUBICSPLINE":
        values[2] = values[1]  # equal keys (three.js keeps the key), then a pair slerp lerps (d > 0.9995)
        values[4] = values[3] * (1 + 1e-7)
    s = Sampler(times, values, interpolation)
    at = np.concatenate([[times[0] - 1.0, times[-1] + 1.0], times, rng.uniform(times[0], times[-1], 64)])
    one_by_one = np.stack([sample(s, float(t), path, rule) for t in at])
    np.testing.assert_allclose(sample_many(s, at, path, rule), one_by_one, rtol=0, atol=1e-14)
