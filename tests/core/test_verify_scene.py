# SPDX-License-Identifier: GPL-3.0-or-later
"""The independent verifier on a scene built without Blender: a good scene passes, and each
tampering is caught with a message that names what is wrong."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from skin_audit.core.errors import InputError, VerificationError
from skin_audit.core.maths.affine import skinning_matrices, translation_only_inverse
from skin_audit.core.maths.dqs import dual_quaternion_skinning
from skin_audit.core.maths.lbs import linear_blend_skinning
from skin_audit.core.output_files import json_text as dumps
from skin_audit.core.twist.cylinder import build_cylinder, linear_height_weights
from skin_audit.core.twist.outputs import SCENE_FORMAT, Scene, ScenePose, scene_json
from skin_audit.core.twist.seed import seed_rig
from skin_audit.core.twist.verify import load_scene, verify_scene

ANGLES = (0.0, 90.0, 180.0)


def build_scene() -> Scene:
    """The twist scene from core pieces; Blender's output stands in as numpy rounded to float32."""
    cyl = build_cylinder()
    idx, w = linear_height_weights(cyl.vertices)
    bind, _ = seed_rig(0.0)
    inv = translation_only_inverse(bind)
    poses = []
    for method, skin_fn in (("lbs", linear_blend_skinning), ("dqs", dual_quaternion_skinning)):
        for deg in ANGLES:
            _, current = seed_rig(np.radians(deg))
            skin = skinning_matrices(current, inv)
            pos = skin_fn(cyl.vertices, idx, w, skin)
            blender = pos.astype(np.float32).astype(np.float64)
            poses.append(ScenePose(method, deg, current, skin, pos, blender))
    return Scene("0.1.0", "none (numpy)", "Cylinder", "Armature", ("root", "child"), (-1, 0),
                 cyl.vertices, cyl.triangles, cyl.ring_of(), idx, w, bind, inv, tuple(poses))


GOOD = scene_json(build_scene())


@pytest.fixture
def data():
    return copy.deepcopy(GOOD)


def rejected(data) -> str:
    with pytest.raises(VerificationError) as err:
        verify_scene(data)
    return str(err.value)


def test_good_scene_passes_with_small_errors(data):
    result = verify_scene(data)
    assert (result.poses, result.vertices) == (6, 216)
    assert result.max_product_error < 1e-15
    assert result.max_numpy_error < 1e-14
    # float32 rounding of coordinates of size ~1: half an ulp is 6e-8.
    assert 0.0 < result.max_blender_error < 1.2e-7
    assert result.max_radius_error < 1e-14


def test_good_scene_survives_the_json_file_round_trip(tmp_path):
    path = tmp_path / "twist_scene.json"
    path.write_text(dumps(GOOD), encoding="utf-8")
    loaded = load_scene(path)
    assert loaded["format"] == SCENE_FORMAT
    assert loaded == json.loads(json.dumps(GOOD))
    assert verify_scene(loaded).poses == 6


def test_one_numpy_vertex_moved_by_1e_6_is_caught(data):
    data["poses"][1]["numpy_positions"][37][1] += 1e-6
    msg = rejected(data)
    assert "1 disagreement" in msg
    assert "pose 1 (lbs 90.0 deg): numpy vertex 37 is off by 1e-06" in msg


def test_one_blender_vertex_moved_by_1e_4_is_caught(data):
    data["poses"][5]["blender_positions"][100][0] -= 1e-4
    assert "pose 5 (dqs 180.0 deg): Blender vertex 100 is off by 0.0001" in rejected(data)


def test_a_skinning_matrix_entry_changed_is_caught(data):
    data["poses"][4]["skinning_matrices"][1][0][1] += 1e-9
    msg = rejected(data)
    assert "pose 4 (dqs 90.0 deg): stored skinning matrices differ from G B^-1 by 1e-09" in msg


def test_an_inverse_bind_matrix_changed_is_caught(data):
    data["armature"]["inverse_bind_matrices"][1][2][3] = -0.9
    msg = rejected(data)
    assert "bone 1: bind @ inverse_bind differs from identity by 0.1" in msg
    assert "stored skinning matrices differ from G B^-1" in msg


def test_a_current_matrix_changed_is_caught(data):
    data["poses"][2]["current_world_matrices"][1][0][3] = 0.01
    assert "pose 2 (lbs 180.0 deg): stored skinning matrices differ" in rejected(data)


def test_a_weight_changed_is_caught_naming_the_vertex(data):
    data["influences"]["weights"][150][0] += 1e-3
    msg = rejected(data)
    assert "vertex 150: weights" in msg and "not a partition of one (1 vertices in all)" in msg


def test_weights_that_still_sum_to_one_but_disagree_with_the_positions_are_caught(data):
    data["influences"]["weights"][100] = [0.25, 0.75]  # was (1 - z/2, z/2) = (0.5833.., 0.4166..)
    assert "pose 1 (lbs 90.0 deg): numpy vertex 100 is off" in rejected(data)


def test_a_consistent_scene_of_the_wrong_twist_fails_the_radius_check(data):
    # Child turned about x, not z: products and positions all agree with each other, but the
    # ring radii no longer follow r'/r = sqrt(1 - 4 w (1 - w) sin^2(theta / 2)).
    scene = build_scene()
    cyl_idx, cyl_w = scene.indices, scene.weights
    current = scene.bind.copy()
    c, s = np.cos(np.pi / 2), np.sin(np.pi / 2)
    current[1, :3, :3] = [[1, 0, 0], [0, c, -s], [0, s, c]]
    skin = skinning_matrices(current, scene.bind_inverse)
    pos = linear_blend_skinning(scene.bind_vertices, cyl_idx, cyl_w, skin)
    data["poses"][1].update(current_world_matrices=current.tolist(), skinning_matrices=skin.tolist(),
                            numpy_positions=pos.tolist(), blender_positions=pos.tolist())
    msg = rejected(data)
    assert msg.startswith("1 disagreement")
    assert "pose 1 (lbs 90.0 deg): ring radius off the closed form" in msg


def test_a_pose_labelled_with_the_wrong_method_is_caught(data):
    data["poses"][5]["method"] = "lbs"  # DQS output checked as LBS at 180 degrees
    assert "pose 5 (lbs 180.0 deg): numpy vertex" in rejected(data)


def test_an_unknown_method_is_a_structural_problem(data):
    data["poses"][0]["method"] = "magic"
    assert "pose 0: method 'magic' is neither 'lbs' nor 'dqs'" in rejected(data)


def test_a_nan_position_cannot_pass(data):
    data["poses"][2]["numpy_positions"][3][0] = float("nan")
    assert "pose 2: numpy_positions contains NaN or infinite values" in rejected(data)


def test_a_nan_weight_cannot_pass(data):
    data["influences"]["weights"][9][1] = float("nan")
    assert "vertex 9: has a NaN, infinite or non-numeric weight" in rejected(data)


@pytest.mark.parametrize("bad_index", [2, -1, 1.0])
def test_a_joint_index_out_of_range_is_named_not_crashed_on(data, bad_index):
    # -1 would silently read the last joint through Python's negative indexing.
    data["influences"]["joint_indices"][12][0] = bad_index
    assert "vertex 12: has a joint index outside 0..1" in rejected(data)


def test_wrong_shapes_are_structural_problems(data):
    data["poses"][3]["blender_positions"] = data["poses"][3]["blender_positions"][:-1]
    assert "pose 3: blender_positions has shape (215, 3), expected (216, 3)" in rejected(data)
    data = copy.deepcopy(GOOD)
    data["influences"]["weights"] = data["influences"]["weights"][:10]
    assert "10 weight rows for 216 vertices" in rejected(data)


def test_missing_data_is_a_verification_error(data):
    del data["armature"]["inverse_bind_matrices"]
    assert "missing or has malformed data" in rejected(data)


def test_load_scene_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_scene(tmp_path / "nope.json")


def test_load_scene_not_json(tmp_path):
    path = tmp_path / "scene.json"
    path.write_text("{ not json", encoding="utf-8")
    with pytest.raises(InputError, match="not a readable JSON file"):
        load_scene(path)
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputError, match="not a readable JSON file"):
        load_scene(path)


@pytest.mark.parametrize("content", ['{"format": "something.else"}', "[1, 2, 3]", "{}"])
def test_load_scene_wrong_format(tmp_path, content):
    path = tmp_path / "scene.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="not a skin_audit twist scene"):
        load_scene(path)


def test_load_scene_on_a_folder(tmp_path):
    with pytest.raises(InputError):
        load_scene(tmp_path)
