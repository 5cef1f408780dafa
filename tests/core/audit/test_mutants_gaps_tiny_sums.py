# SPDX-License-Identifier: GPL-3.0-or-later
"""The recomputation check's looser tolerance for vertices whose weights sum to very little.

Blender works in float32 and divides by the sum, so a vertex weighing 0.005 in all moves with
its rounding amplified: skinning-mismatch ("beyond float32 tolerance") compares such vertices
(sum under 0.01) within 1e-3 of the mesh size, the others within 2e-5.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.core.audit.rule_helpers import audit, codes
from tests.factories import numpy_rigs as nr


def _mesh(offset: float):
    rig = nr.chain_tube(("Root", "Child"))
    groups = {k: v.copy() for k, v in rig.groups.items()}
    for g in groups.values():
        g[0] *= 0.005  # vertex 0 (ring 0, all Root's): weight sum 0.005
    mesh = nr.skinned_mesh(nr.Rig(rig.rows, rig.rest, groups, rig.edges))
    assert mesh.blender is not None
    moved = mesh.blender.copy()
    moved[0, 2] += offset
    return dataclasses.replace(mesh, blender=moved)


def test_a_small_difference_on_a_vertex_of_tiny_weight_is_within_float32_rounding():
    # The tube (2 long, radius 0.5) is about 2.4 in size: 3e-4 is under 1e-3 x size, over 2e-5 x size.
    assert "skinning-mismatch" not in codes(audit(_mesh(3e-4)))


def test_a_large_difference_on_a_vertex_of_tiny_weight_is_a_mismatch():
    assert "skinning-mismatch" in codes(audit(_mesh(0.01)))


def test_the_same_small_difference_on_a_fully_weighted_vertex_is_a_mismatch():
    mesh = _mesh(0.0)
    assert mesh.blender is not None
    moved = mesh.blender.copy()
    moved[nr.ring(8)[0], 2] += 3e-4
    found = audit(dataclasses.replace(mesh, blender=moved))
    assert "skinning-mismatch" in codes(found)
    assert np.isclose(found.metrics["max_numpy_vs_blender"], 3e-4, atol=1e-6)
