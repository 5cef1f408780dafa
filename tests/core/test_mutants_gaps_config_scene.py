# SPDX-License-Identifier: GPL-3.0-or-later
"""The config's rest_pose and the lowest max_influences; a glTF node's matrix (column-major)."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.errors import InputError
from skin_audit.core.gltf.document import load_gltf
from skin_audit.core.gltf.scene import rest_transforms
from skin_audit.core.gltf.skin import pose_at
from skin_audit.core.reports.config import load_config
from tests.core.test_gltf_reader import Tiny


def _config(tmp_path, text: str):
    path = tmp_path / "skin_audit.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


@pytest.mark.parametrize(("stored", "read"), [('"t"', "t"), ('"a"', "a"), ('"T"', "t")])
def test_the_rest_pose_convention_is_read_from_the_audit_table(tmp_path, stored, read):
    config = _config(tmp_path, f"[audit]\nrest_pose = {stored}\n")
    assert config.rest_pose == read
    assert config.option_overrides()["rest_pose"] == read


def test_a_rest_pose_other_than_t_or_a_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"rest_pose = 'x': expected one of t, a"):
        _config(tmp_path, '[audit]\nrest_pose = "x"\n')


def test_one_influence_is_the_smallest_max_influences(tmp_path):
    assert _config(tmp_path, "[audit]\nmax_influences = 1\n").max_influences == 1
    with pytest.raises(InputError, match=r"max_influences = 0: expected a whole number >= 1"):
        _config(tmp_path, "[audit]\nmax_influences = 0\n")


def test_a_node_matrix_is_read_column_major(tmp_path):
    # A quarter turn about z and a move to (2, 3, 4), written column by column (glTF 2.0 3.5.3).
    t = Tiny()
    t.json["nodes"] = [{"matrix": [0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1, 0, 2, 3, 4, 1], "children": [1]},
                       {"translation": [1.0, 0.0, 0.0]}]
    doc = load_gltf(t.gltf(tmp_path))
    expected = [[0, -1, 0, 2], [1, 0, 0, 3], [0, 0, 1, 4], [0, 0, 0, 1]]
    rest = rest_transforms(doc)
    assert rest.has_matrix.tolist() == [True, False]
    np.testing.assert_array_equal(rest.matrix[0], expected)
    world = pose_at(doc).world
    np.testing.assert_allclose(world[0], expected, atol=1e-15)
    # The child one unit along the parent's x, which the turn sends along +y: (2, 4, 4).
    np.testing.assert_allclose(world[1][:3, 3], [2.0, 4.0, 4.0], atol=1e-15)
