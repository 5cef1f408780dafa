# SPDX-License-Identifier: GPL-3.0-or-later
"""Rest-drift causes on a two-bone tube: a B-Bone is blamed only for the drifting vertices it
weighs, whatever its index and however few its segments; an armature scale far from 1 on one
side only is named."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from skin_audit.core.audit.drift_causes import rest_drift_causes
from tests.factories import numpy_rigs as nr


def _mesh(segments):
    mesh = nr.skinned_mesh(nr.chain_tube())
    return replace(mesh, bones=replace(mesh.bones, bbone_segments=np.array(segments)))


def test_a_two_segment_b_bone_at_index_0_is_blamed_for_its_own_vertices():
    mesh = _mesh([2, 1])
    (root,) = np.flatnonzero(np.asarray(mesh.deform_groups()) == 0)  # the group of bone 0, Root
    weighted = mesh.weights[root] > 0
    assert weighted.any() and not weighted.all()
    assert rest_drift_causes(mesh, weighted) == ["B-Bone segments on Root"]
    # Vertices Root does not weigh: Root is not a cause of their drift.
    assert rest_drift_causes(mesh, ~weighted) == []


def test_a_huge_armature_scale_on_one_axis_is_named():
    mesh = replace(_mesh([1, 1]), armature_scale=np.array([1e7, 1.0, 1.0]))
    (cause,) = rest_drift_causes(mesh, np.ones(mesh.vertex_count, dtype=bool))
    assert cause.startswith("armature scale [10000000.0, 1.0, 1.0]")
