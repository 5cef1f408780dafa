# SPDX-License-Identifier: GPL-3.0-or-later
"""A glTF file against what Blender made of it, on hand-built data (numpy only): every glTF
finding code on a tiny file, the vertex pairing, the importer's weight changes, placement."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.engines.gltf_audit import (
    GLTF_CODES,
    ImportedMesh,
    file_divergence,
    gltf_from_blender,
    imported_layout,
    importer_changes,
    match_node,
    place_file_findings,
    unmatched_finding,
    unskinned_finding,
)
from skin_audit.core.engines.gltf_path import gltf_engine_positions
from skin_audit.core.engines.targets import THREEJS
from skin_audit.core.gltf.checks import file_checks
from skin_audit.core.gltf.document import load_gltf
from skin_audit.core.gltf.skin import skinned_primitives
from tests.core.test_gltf_reader import Tiny

POSITIONS = [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
JOINTS = [[0, 1, 0, 0], [5, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 0]]
#: v0 clean; v1 joint 5 of a 2-joint skin; v2 above 1, negative, joint 1 on a zero slot; v3 joint 0 twice.
WEIGHTS = [[0.5, 0.5, 0, 0], [1, 0, 0, 0], [1.2, -0.2, 0, 0], [0.5, 0.5, 0, 0]]


def blender_coords(p: np.ndarray) -> np.ndarray:
    """glTF Y up as Blender's importer writes it, Z up: (x, -z, y)."""
    return np.column_stack([p[:, 0], -p[:, 2], p[:, 1]])


def broken_tiny(first_key: float = 0.0) -> Tiny:
    """A tiny skinned glTF with the weights and joints above and a rotation clip on J0 whose first
    key (at ``first_key`` seconds) has length 2."""
    t = Tiny()
    pos = t.accessor(POSITIONS, "<f4", 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 1])
    joints = t.accessor(JOINTS, "<u1", 5121, "VEC4")
    w = t.accessor(WEIGHTS, "<f4", 5126, "VEC4")
    t.json["meshes"] = [{"primitives": [{"attributes": {"POSITION": pos, "JOINTS_0": joints, "WEIGHTS_0": w}}]}]
    t.json["skins"] = [{"joints": [1, 2]}]
    t.json["nodes"] = [{"name": "Body", "mesh": 0, "skin": 0}, {"name": "J0", "children": [2]},
                       {"name": "J1", "translation": [0.0, 1.0, 0.0]}]
    times = t.accessor([first_key, 1.0], "<f4", 5126, "SCALAR", min=[first_key], max=[1.0])
    keys = t.accessor([[0, 0, 0, 2.0], [0, 0, 0, 1.0]], "<f4", 5126, "VEC4")  # key 0 has length 2
    t.json["animations"] = [{"samplers": [{"input": times, "output": keys}],
                             "channels": [{"sampler": 0, "target": {"node": 1, "path": "rotation"}}]}]
    return t


@pytest.fixture
def broken(tmp_path) -> Path:
    return broken_tiny().gltf(tmp_path)


def test_every_gltf_file_code_on_a_tiny_file(broken):
    found = {f.code: f for f in file_checks(load_gltf(broken))}
    assert 1 in found["gltf-joint-out-of-range"].vertices
    assert 2 in found["gltf-weight-negative"].vertices
    zero = found["gltf-joint-on-zero-weight"]  # v2: once for the file, INFO (such a slot moves nothing)
    assert (zero.severity, zero.count, zero.vertices, zero.details["where"]) == ("INFO", 1, (), "file")
    assert zero.details["validator_count"] == 1 and list(zero.details["primitives"].values()) == [1]
    assert 3 in found["gltf-joint-repeated"].vertices
    assert 2 in found["gltf-blender-clamps-weight"].vertices
    assert found["gltf-rotation-not-unit"].vertices == (0,)  # keyframe 0
    assert "gltf-weights-not-normalised" in found
    assert set(found) <= GLTF_CODES


def imported(doc, rest_blender: np.ndarray, weights: np.ndarray, name: str = "Body",
             faces: list | None = None) -> ImportedMesh:
    (drawn,) = gltf_engine_positions(doc, THREEJS)
    world = blender_coords(drawn.positions)
    # The file has no indices: rows 0..3 drawn as triangles, the importer makes face (0, 1, 2).
    tris = np.array([[0, 1, 2]] if faces is None else faces, dtype=np.int64).reshape(-1, 3)
    return ImportedMesh(name, rest_blender, world, ("J0", "J1"), weights.astype(np.float32), tris)


def test_pairing_follows_the_importer_order_and_is_verified_on_the_faces(broken):
    doc = load_gltf(broken)
    prims = skinned_primitives(doc)
    names = {0: "Body", 1: "J0", 2: "J1"}
    rest = blender_coords(np.array(POSITIONS))
    good = imported(doc, rest, np.zeros((2, 4)))
    match = match_node(doc, prims, good, names)
    assert match.reliable and match.node == 0 and match.offsets == (0,)
    np.testing.assert_array_equal(match.rows[0], [0, 1, 2, 3])
    np.testing.assert_allclose(gltf_from_blender(rest), POSITIONS, atol=0)
    d = file_divergence(match, gltf_engine_positions(doc, THREEJS), good)
    # Vertex 1's joint 5 is past the skin: three.js draws it nowhere, infinitely far.
    assert d is not None and d[[0, 2, 3]].max() == 0.0 and d[1] == np.inf
    # Another name does not matter when the data fits; neither do rest positions the importer moved
    # (its bind pose): the faces decide.
    assert match_node(doc, prims, imported(doc, rest, np.zeros((2, 4)), "Renamed"), names).reliable
    assert match_node(doc, prims, imported(doc, rest * 100.0 + 3.0, np.zeros((2, 4))), names).reliable
    # Other faces, or another vertex count: not paired, saying which.
    reordered = imported(doc, rest, np.zeros((2, 4)), faces=[[0, 1, 3]])
    bad = match_node(doc, prims, reordered, names)
    assert not bad.reliable and bad.node == 0 and "not the same faces" in bad.why
    assert file_divergence(bad, gltf_engine_positions(doc, THREEJS), reordered) is None
    fewer = match_node(doc, prims, imported(doc, rest[:3], np.zeros((2, 3))), names)
    assert not fewer.reliable and "makes 4 vertices" in fewer.why and "has 3" in fewer.why
    finding = unmatched_finding(reordered.object, bad.why, THREEJS)
    assert finding.code == "gltf-not-compared" and finding.severity == "INFO" and bad.why in finding.message
    # File findings on an unpaired mesh keep their counts, not rows that may be someone else's.
    placed = place_file_findings(file_checks(doc), bad)
    assert placed and all(f.vertices == () and f.details["vertex_order"] == "unknown" for f in placed)
    assert all(f.count > 0 for f in placed)


def test_importer_layout_by_hand(tmp_path):
    """Rows the indices use, ascending, per primitive; strips and fans unrolled as the importer does;
    a file row no index uses has no Blender vertex, so a finding on it keeps its count only."""
    t = Tiny()
    pos = t.accessor(np.arange(18, dtype=float).reshape(6, 3), "<f4", 5126, "VEC3", min=[0, 1, 2], max=[15, 16, 17])
    joints = t.accessor([[0, 0, 0, 0]] * 6, "<u1", 5121, "VEC4")
    weights = t.accessor([[1, 0, 0, 0]] * 5 + [[0.5, 0, 0, 0]], "<f4", 5126, "VEC4")  # row 5: sum 0.5
    attrs = {"POSITION": pos, "JOINTS_0": joints, "WEIGHTS_0": weights}
    t.json["meshes"] = [{"primitives": [
        {"attributes": attrs, "indices": t.accessor([5, 3, 1], "<u2", 5123, "SCALAR")},  # rows 0, 2, 4 unused
        {"attributes": attrs, "indices": t.accessor([4, 2, 0, 5], "<u2", 5123, "SCALAR"), "mode": 5},
        {"attributes": attrs, "indices": t.accessor([1, 2, 3, 4], "<u2", 5123, "SCALAR"), "mode": 6},
        {"attributes": {"POSITION": pos}, "indices": t.accessor([2, 1, 0], "<u2", 5123, "SCALAR")},  # unskinned
    ]}]
    t.json["skins"] = [{"joints": [1]}]
    t.json["nodes"] = [{"name": "Body", "mesh": 0, "skin": 0}, {"name": "J0"}]
    doc = load_gltf(t.gltf(tmp_path))
    layout = imported_layout(doc, 0)
    assert [lp.primitive for lp in layout] == [0, 1, 2, 3]
    assert [lp.rows.tolist() for lp in layout] == [[1, 3, 5], [0, 2, 4, 5], [1, 2, 3, 4], [0, 1, 2]]
    assert layout[1].triangles.tolist() == [[4, 2, 0], [2, 5, 0]]  # the odd triangle swaps its last two
    assert layout[2].triangles.tolist() == [[1, 2, 3], [1, 3, 4]]
    # Blender's faces, as the importer numbers them: 0-2 from primitive 0, 3-6 from 1, 7-10 from 2,
    # 11-13 from 3 (no JOINTS/WEIGHTS: Blender skins it to the first joint, engines draw it unskinned).
    faces = [[2, 1, 0], [5, 4, 3], [4, 6, 3], [7, 8, 9], [7, 9, 10], [13, 12, 11]]
    rest = np.zeros((14, 3))
    mesh = ImportedMesh("Body", rest, rest, ("J0",), np.ones((1, 14), dtype=np.float32), np.array(faces))
    match = match_node(doc, skinned_primitives(doc), mesh, {0: "Body"})
    assert match.reliable and match.offsets == (0, 3, 7) and match.unskinned.tolist() == [11, 12, 13]
    assert unskinned_finding(mesh.object, match, THREEJS).count == 3
    sums = {f.details["where"]: f.vertices for f in file_checks(doc) if f.code == "gltf-weights-not-normalised"}
    placed = {f.details["where"]: f.vertices for f in place_file_findings(file_checks(doc), match)
              if f.code == "gltf-weights-not-normalised"}
    assert sums == {f"node 0 mesh 0 primitive {p}": (5,) for p in range(3)}
    # Row 5 is Blender vertex 2 (primitive 0), 6 (primitive 1); primitive 2 never uses it.
    assert placed == {"node 0 mesh 0 primitive 0": (2,), "node 0 mesh 0 primitive 1": (6,),
                      "node 0 mesh 0 primitive 2": ()}


def test_importer_changes_count_the_clamped_vertex(broken):
    doc = load_gltf(broken)
    prims = skinned_primitives(doc)
    rest = blender_coords(np.array(POSITIONS))
    # What Blender's importer stores: v2's 1.2 clamped to 1 and its -0.2 to 0; the rest as stored
    # (v1's joint 5 names no bone: nothing; v3's repeated joint keeps its last weight).
    groups = np.array([[0.5, 0.0, 1.0, 0.5], [0.5, 0.0, 0.0, 0.0]])
    mesh = imported(doc, rest, groups)
    match = match_node(doc, prims, mesh, {0: "Body"})
    change = importer_changes(doc, match, mesh, THREEJS)
    assert change is not None and change.code == "gltf-blender-changes-weights"
    assert change.vertices == (2,)
    assert (change.details["clamped"], change.details["all_zero"], change.details["other"]) == (1, 0, 0)
    assert "Blender shows this file differently from engines" in change.message
    # Blender holding exactly the stored weights: no finding.
    stored = groups.copy()
    stored[:, 2] = [1.2, -0.2]
    assert importer_changes(doc, match, imported(doc, rest, stored), THREEJS) is None


def _zero_slots(tmp_path, joints_a, joints_b) -> Path:
    """Two primitives of one mesh (and a second mesh node using it again) with weights (1, 0, 0, 0)."""
    t = Tiny()
    pos = t.accessor(POSITIONS[:2], "<f4", 5126, "VEC3", min=[1, 0, 0], max=[1, 1, 0])
    w = t.accessor([[1, 0, 0, 0], [1, 0, 0, 0]], "<f4", 5126, "VEC4")
    prims = [{"attributes": {"POSITION": pos, "JOINTS_0": t.accessor(j, "<u1", 5121, "VEC4"), "WEIGHTS_0": w}}
             for j in (joints_a, joints_b)]
    t.json["meshes"] = [{"primitives": prims}]
    t.json["skins"] = [{"joints": [1, 2]}]
    t.json["nodes"] = [{"name": "Body", "mesh": 0, "skin": 0}, {"name": "J0", "children": [2]},
                       {"name": "J1", "translation": [0.0, 1.0, 0.0]}]
    return t.gltf(tmp_path)


def test_joints_on_zero_weight_slots_are_one_info_for_the_file(tmp_path):
    """Joints on zero slots in both primitives: one INFO (it moves nothing) counting the three
    vertices, and the validator's four messages (one per slot: vertex 1 of the first primitive has
    two); on no mesh entry (its rows are no Blender vertices)."""
    doc = load_gltf(_zero_slots(tmp_path, [[0, 1, 0, 0], [0, 1, 1, 0]], [[0, 0, 0, 0], [0, 0, 1, 0]]))
    (zero,) = [f for f in file_checks(doc) if f.code == "gltf-joint-on-zero-weight"]
    assert (zero.severity, zero.count, zero.vertices) == ("INFO", 3, ())
    assert zero.details["validator_count"] == 4 and sorted(zero.details["primitives"].values()) == [1, 2]
    assert "moves nothing in any engine" in zero.message
    assert zero.details["where"] == "file"  # not "node ...": the file's first rig entry holds it


def test_unused_slots_on_joint_0_are_not_reported(tmp_path):
    doc = load_gltf(_zero_slots(tmp_path, [[0, 0, 0, 0], [1, 0, 0, 0]], [[1, 0, 0, 0], [0, 0, 0, 0]]))
    assert "gltf-joint-on-zero-weight" not in {f.code for f in file_checks(doc)}
