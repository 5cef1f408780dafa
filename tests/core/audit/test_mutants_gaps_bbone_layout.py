# SPDX-License-Identifier: GPL-3.0-or-later
"""The B-Bone weight split of the blend layout, by hand on a straight 2-segment B-Bone.

Blender's Armature modifier (b_bone_deform) puts a vertex between the B-Bone's joints ``i``
and ``i + 1`` with a blend ``b``: on a STRAIGHT mapping ``pre = clamp(y / length, 0, 1) * S``,
``i = min(floor(pre), S - 1)``, ``b = pre - i``; the bone's weight ``w`` becomes ``w (1 - b)``
on joint ``i`` and ``w b`` on joint ``i + 1``.
"""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.maths import bbone as bb
from tests.core.audit.test_sweep_threads import with_middle_bbone
from tests.factories.numpy_rigs import BoneRow, Rig, skinned_mesh

# A straight chain along +y: Root 0..1, Bend 1..3 (2 segments, length 2), Tip 3..4.
ROWS = (BoneRow("Root", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
        BoneRow("Bend", (0.0, 1.0, 0.0), (0.0, 3.0, 0.0), "Root", bbone_segments=2),
        BoneRow("Tip", (0.0, 3.0, 0.0), (0.0, 4.0, 0.0), "Bend"))
# Bend's local y of each vertex is world y - 1:
#   v0 y = 0.3 -> pre 0.3: joint 0 (1 - 0.3), joint 1 (0.3)
#   v1 y = 1.6 -> pre 1.6: joint 1 (0.4), joint 2 (0.6)
#   v2 y = 0.0 -> pre 0:   joint 0 (1), joint 1 (0: no entry)
#   v3 below Bend, weighted by Root only
REST = np.array([[0.0, 1.3, 0.0], [0.0, 2.6, 0.0], [0.0, 1.0, 0.0], [0.0, 0.5, 0.0]])
GROUPS = {"Root": np.array([0.2, 0.0, 0.0, 1.0]), "Bend": np.array([0.8, 1.0, 0.5, 0.0]),
          "Tip": np.array([0.0, 0.0, 0.0, 0.0])}


@pytest.fixture
def mesh():
    plain = skinned_mesh(Rig(ROWS, REST, GROUPS), blender=None)
    return with_middle_bbone(plain, ROWS, bb.BBoneShape())


def _runs(layout) -> dict[int, dict[int, float]]:
    runs = layout.runs
    out: dict[int, dict[int, float]] = {}
    for r, bone in enumerate(runs.bone.tolist()):
        lo, hi = runs.starts[r], runs.starts[r + 1]
        out[int(bone)] = {int(v): float(w) for v, w in zip(runs.vertex[lo:hi], runs.weight[lo:hi], strict=True)}
    return out


def test_the_bbone_weight_is_split_between_the_two_joints_a_vertex_lies_between(mesh):
    layout = mesh.blend_layout
    # Bend's joints are numbered after the 3 bones: 3, 4, 5.
    assert layout.joints == {1: 3}
    got = _runs(layout)
    expected = {
        0: {0: 0.2, 3: 1.0},                      # Root, as stored
        3: {0: 0.8 * 0.7, 2: 0.5},                # Bend joint 0
        4: {0: 0.8 * 0.3, 1: 1.0 * 0.4},          # Bend joint 1 (v2's part is 0: left out)
        5: {1: 1.0 * 0.6},                        # Bend joint 2
    }
    assert got.keys() == expected.keys()
    for run, parts in expected.items():
        assert got[run].keys() == parts.keys(), run
        for v, w in parts.items():
            assert got[run][v] == pytest.approx(w, abs=1e-6), (run, v)
    # Each vertex's parts still sum to its weights: 1, 1, 0.5, 1 (what Blender divides by).
    total = np.zeros(4)
    np.add.at(total, layout.runs.vertex, layout.runs.weight)
    np.testing.assert_allclose(total, [1.0, 1.0, 0.5, 1.0], atol=1e-6)
    # Scaled by a / sum w: v2's parts by 1 / 0.5.
    run_of = np.repeat(layout.runs.bone, np.diff(layout.runs.starts))
    i = int(np.flatnonzero((layout.runs.vertex == 2) & (run_of == 3))[0])
    assert layout.scaled[i] == pytest.approx(1.0, abs=1e-6)


def test_the_mapping_itself_is_the_hand_parameter(mesh):
    index, blend = mesh.bbone_mapping[1]
    # In Bend's deform column order: the vertices it weighs (v0, v1, v2).
    assert index.tolist() == [0, 1, 0]
    np.testing.assert_allclose(blend, [0.3, 0.6, 0.0], atol=1e-6)
