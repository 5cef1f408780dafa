# SPDX-License-Identifier: GPL-3.0-or-later
"""Each fix on a rig built in code with its finding: the re-audit no longer reports it, and
everything the finding does not name is bit for bit as before (other groups' and vertices'
weights read with Blender's own per-vertex API, positions, bones, modifiers, other objects);
locked groups never change."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

# tests/factories/blender_rigs.fixable_rig's layout (not imported here: no bpy at collection time).
BONES = ("A", "B", "C", "D", "E", "F")
RINGS, SEGMENTS = 7, 8
CROWDED = np.arange(3 * SEGMENTS, 4 * SEGMENTS)


def fixable_rig(bpy, locked: bool = True):
    from tests.factories.blender_rigs import FIX_BONES, FIX_SEGMENTS, fixable_rig

    assert (FIX_BONES, FIX_SEGMENTS) == (BONES, SEGMENTS)
    return fixable_rig(locked)


def snapshot(bpy):
    """Everything a fix could touch, per object: weights by group name, positions, bones, modifiers."""
    from skin_audit.blender.read.weights import group_weights

    out = {}
    for o in bpy.data.objects:
        entry = {"matrix": np.array(o.matrix_world)}
        if o.type == "MESH":
            w = group_weights(o, "loop")
            entry["weights"] = {g.name: w[g.index].copy() for g in o.vertex_groups}
            entry["locks"] = {g.name: g.lock_weight for g in o.vertex_groups}
            co = np.zeros(len(o.data.vertices) * 3, dtype=np.float32)
            o.data.vertices.foreach_get("co", co)
            entry["co"] = co
            entry["modifiers"] = [(m.name, m.type, getattr(m, "object", None) and m.object.name,
                                   getattr(m, "use_deform_preserve_volume", None), m.show_viewport)
                                  for m in o.modifiers]
        else:
            entry["bones"] = {b.name: (b.use_deform, b.bbone_segments, tuple(b.head_local), tuple(b.tail_local))
                              for b in o.data.bones}
        out[o.name] = entry
    return out


def weight_cells_changed(before, after, name="Body"):
    """{(group name, vertex)} whose stored weight differs (a removed group: all its non-zero cells)."""
    b, a = before[name]["weights"], after[name]["weights"]
    cells = set()
    for g in set(b) | set(a):
        old = b.get(g, np.zeros_like(next(iter(b.values()))))
        new = a.get(g, np.zeros_like(old))
        cells |= {(g, int(v)) for v in np.flatnonzero(old != new)}
    return cells


def assert_same_except_weights(before, after):
    """Every object's positions, matrices, modifiers, bones and group locks exactly as before."""
    assert before.keys() == after.keys()
    assert_same_except_weights_sym(before, after)
    assert before["Bystander"]["weights"]["A"].tobytes() == after["Bystander"]["weights"]["A"].tobytes()


def run_fix(bpy, obj, code, **settings):
    from skin_audit.blender.fix.apply import FixSettings, fix_mesh

    return fix_mesh(bpy.context, obj, [code], FixSettings(**settings))[0]


def test_rig_has_every_finding(bpy, empty_scene):
    from skin_audit.blender.run.audit_scene import audit_meshes
    from skin_audit.core.audit.options import AuditOptions

    obj, _ = fixable_rig(bpy)
    codes = {f.code for a in audit_meshes(bpy.context, [obj], AuditOptions(shape_checks=False)) for f in a.findings}
    assert {"too-many-influences", "weights-on-non-deform-bone", "group-without-bone"} <= codes


def test_limit_influences_changes_only_the_crowded_ring(bpy, empty_scene):
    obj, _ = fixable_rig(bpy)
    before = snapshot(bpy)
    out = run_fix(bpy, obj, "too-many-influences", max_influences=4)
    after = snapshot(bpy)
    assert out.before.get("too-many-influences") == len(CROWDED)
    assert "too-many-influences" not in out.after and "weights-not-normalized" not in out.after
    changed = weight_cells_changed(before, after)
    assert changed and {v for _, v in changed} <= set(CROWDED.tolist())
    assert {g for g, _ in changed} <= set(BONES)  # deform groups only: never Lock, Prop, Ghost
    assert out.changed_cells == len(changed)
    w = after["Body"]["weights"]
    assert np.array_equal(w["Lock"], before["Body"]["weights"]["Lock"])
    deform = np.array([w[n] for n in (*BONES, "Lock")], dtype=np.float64)
    assert ((deform[:, CROWDED] > 0).sum(axis=0) <= 4).all()
    assert np.abs(deform[:, CROWDED].sum(axis=0) - 1.0).max() < 1e-6
    # Ring 3's two largest unlocked weights (A and B) survive, with the locked 0.1 / total.
    assert (w["A"][CROWDED] > 0).all() and (w["B"][CROWDED] > 0).all() and (w["F"][CROWDED] == 0).all()
    assert_same_except_weights(before, after)


def test_normalize_only_the_listed_vertices(bpy, empty_scene):
    obj, _ = fixable_rig(bpy)
    hit = [5, 6, 50]
    for v in hit:  # scale their unlocked deform weights by 0.8
        for g in obj.data.vertices[v].groups:
            g.weight *= 0.8
    before = snapshot(bpy)
    out = run_fix(bpy, obj, "weights-not-normalized")
    after = snapshot(bpy)
    assert out.before.get("weights-not-normalized") == len(hit)
    assert "weights-not-normalized" not in out.after
    changed = weight_cells_changed(before, after)
    assert {v for _, v in changed} == set(hit) and {g for g, _ in changed} <= set(BONES)
    for v in hit:
        total = sum(after["Body"]["weights"][n][v] for n in (*BONES, "Lock"))
        assert abs(total - 1.0) < 1e-6
    assert_same_except_weights(before, after)


def test_locked_group_never_changes_while_normalising(bpy, empty_scene):
    obj, _ = fixable_rig(bpy)
    v = int(CROWDED[2])
    for g in obj.data.vertices[v].groups:
        g.weight *= 0.5  # the locked Lock weight is halved too: the free ones must make up the rest
    before = snapshot(bpy)
    run_fix(bpy, obj, "weights-not-normalized")
    after = snapshot(bpy)
    assert np.array_equal(after["Body"]["weights"]["Lock"], before["Body"]["weights"]["Lock"])
    free = sum(after["Body"]["weights"][n][v] for n in BONES)
    assert abs(free + before["Body"]["weights"]["Lock"][v] - 1.0) < 1e-6


def test_unweighted_vertices_take_their_neighbours(bpy, empty_scene):
    obj, _ = fixable_rig(bpy)
    top = list(range((RINGS - 1) * SEGMENTS, RINGS * SEGMENTS))  # the top ring
    for v in top:
        for g in list(obj.data.vertices[v].groups):
            obj.vertex_groups[g.group].remove([v])
    before = snapshot(bpy)
    out = run_fix(bpy, obj, "unweighted-vertices")
    after = snapshot(bpy)
    assert out.before.get("unweighted-vertices") == len(top) and "unweighted-vertices" not in out.after
    changed = weight_cells_changed(before, after)
    assert {v for _, v in changed} == set(top)
    # Each one's only weighted neighbour is the vertex below it (E 0.5, F 0.5): it copies it.
    for name in BONES:  # deform groups only: Prop's weights below are not copied up
        row = after["Body"]["weights"][name]
        assert np.array_equal(row[top], before["Body"]["weights"][name][np.array(top) - SEGMENTS]), name
    assert after["Body"]["weights"]["E"][top[0]] == np.float32(0.5)
    assert_same_except_weights(before, after)


def test_stray_weights_below_threshold(bpy, empty_scene):
    obj, _ = fixable_rig(bpy)
    obj.vertex_groups["F"].add([1, 2], 0.004, "REPLACE")  # a speck far from F
    before = snapshot(bpy)
    run_fix(bpy, obj, "stray-weights", stray_action="below", threshold=0.01)
    after = snapshot(bpy)
    changed = weight_cells_changed(before, after)
    assert {v for _, v in changed} == {1, 2}
    assert after["Body"]["weights"]["F"][[1, 2]].tolist() == [0.0, 0.0]
    assert_same_except_weights(before, after)


def test_stray_islands_are_removed(bpy, empty_scene):
    """A's weights planted on two top-ring vertices (F's tail, far from A and cut off from A's
    region): the islands go, those two vertices are normalised back to F alone, nothing else moves."""
    from tests.factories.blender_rigs import chain_rig

    obj, _ = chain_rig("Body", BONES, RINGS, SEGMENTS)  # clean: no stray weights of its own
    bystander = bpy.data.objects.new("Bystander", bpy.data.meshes.new("Bystander"))
    bystander.vertex_groups.new(name="A")
    bpy.context.scene.collection.objects.link(bystander)
    assert "stray-weights" not in run_fix(bpy, obj, "stray-weights").before
    island = [50, 51]
    obj.vertex_groups["A"].add(island, 0.3, "REPLACE")
    bpy.context.view_layer.update()
    before = snapshot(bpy)
    out = run_fix(bpy, obj, "stray-weights")
    after = snapshot(bpy)
    assert out.before.get("stray-weights") == len(island) and "stray-weights" not in out.after, out
    changed = weight_cells_changed(before, after)
    assert {("A", v) for v in island} <= changed <= {(g, v) for g in BONES for v in island}
    w = after["Body"]["weights"]
    assert w["A"][island].tolist() == [0.0, 0.0] and w["F"][island].tolist() == [1.0, 1.0]
    assert_same_except_weights(before, after)


@pytest.mark.parametrize("action", ["remove", "merge"])
def test_group_fixes(bpy, empty_scene, action):
    obj, _ = fixable_rig(bpy)
    before = snapshot(bpy)
    out = [run_fix(bpy, obj, code, group_action=action)
           for code in ("group-without-bone", "weights-on-non-deform-bone")]
    after = snapshot(bpy)
    assert "group-without-bone" not in out[0].after and "weights-on-non-deform-bone" not in out[1].after
    assert "Ghost" not in after["Body"]["weights"] and "Prop" not in after["Body"]["weights"]
    changed = weight_cells_changed(before, after)
    ghost_prop = {("Ghost", v) for v in (42, 43, 44)} | {("Prop", v) for v in (40, 41)}
    if action == "remove":
        assert changed == ghost_prop
    else:
        # Ghost's and Prop's vertices lie on ring 5, the E/F joint, weighted E 0.5 / F 0.5: the two
        # bones are equally near and equally weighted, so the first, E, takes the weights. Those
        # vertices are then normalised over A..F (Lock untouched).
        touched = {(g, v) for g in BONES for v in (40, 41, 42, 43, 44)}
        assert ghost_prop < changed <= ghost_prop | touched
        w, old = after["Body"]["weights"], before["Body"]["weights"]
        # Ghost: E 0.5 + 0.25 = 0.75, F 0.5 -> 0.6 / 0.4; Prop: E 0.5 + 0.5 = 1.0, F 0.5 -> 2/3, 1/3.
        assert w["E"][[42, 43, 44]] == pytest.approx([0.6] * 3, abs=1e-7)
        assert w["F"][[42, 43, 44]] == pytest.approx([0.4] * 3, abs=1e-7)
        assert w["E"][[40, 41]] == pytest.approx([2 / 3] * 2, abs=1e-7)
        assert old["E"][42] == np.float32(0.5)
        assert "weights-not-normalized" not in out[1].after
    assert_same_except_weights(before, after)


def test_property_fixes(bpy, empty_scene):
    from tests.factories.blender_rigs import chain_rig

    obj, arm = chain_rig("P", ("Root", "Child", "Idle"), use_deform_preserve_volume=True)
    for v in range(len(obj.data.vertices)):
        obj.vertex_groups["Idle"].remove([v])
    arm.data.bones["Child"].bbone_segments = 3
    before = snapshot(bpy)
    for code in ("preserve-volume-on", "deform-bone-without-weights", "bbones-on-deform-bones"):
        out = run_fix(bpy, obj, code)
        assert code in out.before and code not in out.after, out
    after = snapshot(bpy)
    assert not obj.modifiers["Armature"].use_deform_preserve_volume
    assert not arm.data.bones["Idle"].use_deform and arm.data.bones["Root"].use_deform
    assert arm.data.bones["Child"].bbone_segments == 1
    for k in ("matrix", "co", "weights"):
        if k == "weights":
            assert all(np.array_equal(before["P"][k][n], after["P"][k][n]) for n in before["P"][k])
        else:
            assert np.array_equal(before["P"][k], after["P"][k])
    old, new = before[arm.name]["bones"], after[arm.name]["bones"]
    changed_bones = {n for n in old if old[n] != new[n]}
    assert changed_bones == {"Idle", "Child"}


def test_no_finding_changes_nothing_and_unknown_code_is_refused(bpy, empty_scene):
    from skin_audit.core.errors import InputError
    from tests.factories.blender_rigs import chain_rig

    obj, _ = chain_rig("Clean")
    before = snapshot(bpy)
    out = run_fix(bpy, obj, "too-many-influences")
    assert out.changed_cells == 0 and "no 'too-many-influences' finding" in out.message
    after = snapshot(bpy)
    assert weight_cells_changed(before, after, "Clean") == set()
    with pytest.raises(InputError, match="no fix for 'skinning-mismatch'"):
        run_fix(bpy, obj, "skinning-mismatch")


def test_nearest_deform_bone_off_a_joint(bpy, empty_scene):
    """A group on the top ring (centre at F's tail) merges into F; one on ring 3 (centre on the
    C/D joint, both at distance 0) goes to whichever of C and D already weighs more there."""
    from skin_audit.blender.fix.apply import nearest_deform_bone
    from skin_audit.blender.read.weights import group_weights

    obj, arm = fixable_rig(bpy)
    w = group_weights(obj, "loop")
    top = np.zeros(w.shape[1], dtype=np.float32)
    top[(RINGS - 1) * SEGMENTS:] = 1.0
    assert nearest_deform_bone(obj, arm, top, w) == "F"
    ring3 = np.zeros(w.shape[1], dtype=np.float32)
    ring3[CROWDED] = 1.0
    # A weighs most on ring 3 but is far: distance first, then weight among the tied.
    assert nearest_deform_bone(obj, arm, ring3, w) in ("C", "D")
    assert nearest_deform_bone(obj, arm, ring3, w) == ("C" if w[2, CROWDED].sum() >= w[3, CROWDED].sum() else "D")


def _symmetric_rig(bpy):
    """A cylinder about Z (symmetric across x = 0) on a spine with two arms: each side vertex 0.5
    Spine + 0.5 its side's arm, vertices on the plane all Spine; one right vertex then repainted."""
    from tests.factories.blender_rigs import BoneSpec, build_rig, cylinder

    verts, faces = cylinder(5, 8, 0.5, 2.0)
    x = verts[:, 0]
    left, right = np.flatnonzero(x > 1e-6), np.flatnonzero(x < -1e-6)
    weights = {"Spine": (np.arange(len(verts)), np.where(np.abs(x) > 1e-6, 0.5, 1.0)),
               "Arm.L": (left, 0.5), "Arm.R": (right, 0.5)}
    bones = [BoneSpec("Spine", (0, 0, 0), (0, 0, 2)), BoneSpec("Arm.L", (0.2, 0, 1), (1, 0, 1), "Spine"),
             BoneSpec("Arm.R", (-0.2, 0, 1), (-1, 0, 1), "Spine")]
    obj, arm = build_rig("Sym", bones, verts, faces, weights)
    bad = int(2 * 8 + 4)  # ring 2, segment 4: x = -0.5, mirror of ring 2 segment 0
    obj.vertex_groups["Arm.R"].add([bad], 0.2, "REPLACE")
    obj.vertex_groups["Spine"].add([bad], 0.8, "REPLACE")
    bpy.context.view_layer.update()
    return obj, bad


@pytest.mark.parametrize("direction", ["left-to-right", "right-to-left"])
def test_mirror_weights_through_the_bone_pairs(bpy, empty_scene, direction):
    obj, bad = _symmetric_rig(bpy)
    before = snapshot(bpy)
    out = run_fix(bpy, obj, "weight-asymmetry", mirror_direction=direction)
    after = snapshot(bpy)
    assert out.before.get("weight-asymmetry") == 2, out  # the repainted vertex and its mirror
    assert "weight-asymmetry" not in out.after, out
    changed = weight_cells_changed(before, after, "Sym")
    w, old = after["Sym"]["weights"], before["Sym"]["weights"]
    good = bad - 4  # segment 0 of the same ring, x = +0.5
    if direction == "left-to-right":
        # The right vertex takes its left mirror's weights, Arm.L's landing in Arm.R.
        assert changed == {("Arm.R", bad), ("Spine", bad)}
        assert (w["Arm.R"][bad], w["Spine"][bad]) == (old["Arm.L"][good], old["Spine"][good])
    else:
        # The left vertex takes the repainted weights: the data is symmetric again, the other way.
        assert changed == {("Arm.L", good), ("Spine", good)}
        assert (w["Arm.L"][good], w["Spine"][good]) == (np.float32(0.2), np.float32(0.8))
    assert_same_except_weights_sym(before, after)


def assert_same_except_weights_sym(before, after):
    """Every object's positions, matrices, modifiers and bones exactly as before (a snapshot of
    the symmetric rig, which has no bystander)."""
    for name in before:
        for key in ("matrix", "co"):
            if key in before[name]:
                assert np.array_equal(before[name][key], after[name][key]), (name, key)
        for key in ("modifiers", "bones"):
            if key in before[name]:
                assert before[name][key] == after[name][key], (name, key)


def test_command_line_codes_are_the_fixable_codes(bpy):
    """The CLI lists the codes without importing bpy (for --help); it must name exactly FIXABLE."""
    from skin_audit.blender.fix.apply import FIXABLE
    from skin_audit.cli import _fixable

    assert sorted(_fixable()) == sorted(FIXABLE)
