# SPDX-License-Identifier: GPL-3.0-or-later
"""Vertex-group weights: the dense (Geometry Nodes) and sparse (bmesh) reads give exactly
what Blender's own per-vertex API (``v.groups``) gives, and the cost model picks a path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _random_mesh(bpy, vertices: int, groups: int, per_vertex: int, seed: int = 0):
    from skin_audit.blender.build.objects import mesh_from_arrays

    rng = np.random.default_rng(seed)
    obj = bpy.data.objects.new("W", mesh_from_arrays("W", rng.random((vertices, 3))))
    bpy.context.scene.collection.objects.link(obj)
    vg = [obj.vertex_groups.new(name=f"g{i}") for i in range(groups)]
    # Distinct float32 weights per group so a swapped row or column shows.
    member = rng.integers(0, groups, size=(vertices, per_vertex))
    for g in range(groups):
        idx = np.flatnonzero((member == g).any(axis=1))
        for k, chunk in enumerate(np.array_split(idx, 3)):
            if len(chunk):
                vg[g].add(chunk.tolist(), float(np.float32((g + 1) / (groups + 3) + k / 7)), "REPLACE")
    # A group named like a built-in attribute must not be misread by the dense path.
    vg[0].name = "position"
    return obj


# 13 groups: a full dense batch of 8 and a last one of 5 (slots past the last group left unread).
@pytest.mark.parametrize("vertices, groups, per_vertex", [(6000, 40, 3), (8000, 3, 2), (6000, 13, 4)])
def test_every_path_equals_blenders_per_vertex_api(bpy, empty_scene, vertices, groups, per_vertex):
    from skin_audit.blender.read.weights import group_weights

    obj = _random_mesh(bpy, vertices, groups, per_vertex)
    truth = np.zeros((groups, vertices), dtype=np.float32)
    for v in obj.data.vertices:  # Blender's own API, one vertex at a time: the reference
        for g in v.groups:
            truth[g.group, v.index] = g.weight
    assert np.count_nonzero(truth) >= vertices  # every vertex has weights: a real comparison
    for path in ("loop", "dense", "sparse"):
        got = group_weights(obj, path)
        assert got.dtype == np.float32 and got.shape == truth.shape, path
        np.testing.assert_array_equal(got, truth, err_msg=path)


def test_a_mesh_without_weights_reads_as_zeros(bpy, empty_scene):
    from skin_audit.blender.build.objects import mesh_from_arrays
    from skin_audit.blender.read.weights import group_weights

    obj = bpy.data.objects.new("E", mesh_from_arrays("E", np.zeros((6000, 3))))
    bpy.context.scene.collection.objects.link(obj)
    obj.vertex_groups.new(name="empty")
    for path in ("loop", "dense", "sparse"):
        assert not group_weights(obj, path).any(), path


def test_the_cost_model_reads_many_groups_sparsely_and_few_densely(bpy):
    from skin_audit.blender.read.weights import choose_path

    assert choose_path(100, 10) == "sparse"  # the per-vertex loop is never the cheaper read
    assert choose_path(4656, 160) == "sparse"  # the Rigify body in tests/factories/rigify.py
    assert choose_path(42_000, 160) == "sparse"  # a denser Rigify body
    assert choose_path(20_000, 32) == "dense"
    assert choose_path(1_000_000, 32) == "dense"  # the benchmark's million-vertex rig
    assert choose_path(300_000, 64) == "sparse"


def test_a_mesh_without_groups_reads_as_an_empty_table(bpy, empty_scene):
    from skin_audit.blender.build.objects import mesh_from_arrays
    from skin_audit.blender.read.weights import group_weights

    obj = bpy.data.objects.new("N", mesh_from_arrays("N", np.zeros((7000, 3))))
    bpy.context.scene.collection.objects.link(obj)
    got = group_weights(obj)
    assert got.shape == (0, 7000) and got.dtype == np.float32


def test_paths_agree_on_a_real_rig(bpy, empty_scene):
    from skin_audit.blender.read.weights import group_weights

    bpy.ops.import_scene.gltf(filepath=str(ASSETS / "Fox" / "glTF-Binary" / "Fox.glb"))
    obj = next(o for o in bpy.data.objects if o.type == "MESH" and o.vertex_groups)
    loop = group_weights(obj, "loop")
    assert loop.shape[0] == len(obj.vertex_groups) and np.count_nonzero(loop) > len(obj.data.vertices)
    np.testing.assert_array_equal(group_weights(obj, "sparse"), loop)
    np.testing.assert_array_equal(group_weights(obj, "dense"), loop)
