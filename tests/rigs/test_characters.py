# SPDX-License-Identifier: GPL-3.0-or-later
"""Characters, not meshes: a body split into Arm.L / Arm.R judged as the pair it is, a rig
with helper bones judged on its deform hierarchy, meshes tied to an armature that no
modifier deforms, and the sweep naming the bones a rig moves together."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions
from tests.factories.characters import Bone, arm_weights, armature, mesh, split_character, tube

pytestmark = [pytest.mark.blender, pytest.mark.blender42]


def audit_all(bpy, **options):
    """RigAudits and MeshAudits of every skinned mesh in the scene, with the meshes tied to an
    armature that nothing deforms (as a file audit finds them)."""
    from skin_audit.blender.run.audit_scene import audit_rigs, missing_modifiers, skinned_meshes

    bpy.context.view_layer.update()
    objects = list(bpy.context.scene.objects)
    return audit_rigs(bpy.context, skinned_meshes(objects), AuditOptions(**options),
                      missing=missing_modifiers(objects))


def codes(findings) -> set[str]:
    return {f.code for f in findings}


def by_object(meshes):
    return {m.object: m for m in meshes}


# ------------------------------------------------------------------ split meshes


def test_mirrored_arm_meshes_are_checked_as_a_pair(bpy, empty_scene):
    split_character()
    (rig,), meshes = audit_all(bpy)
    assert rig.meshes == ("Body", "Arm.L", "Arm.R")
    assert rig.metrics["mirror_matched_fraction"] == pytest.approx(1.0)
    assert rig.metrics["max_weight_asymmetry"] < 1e-6
    assert not codes(rig.findings) & {"mesh-not-symmetric", "no-mirrored-bones", "deform-bone-without-weights"}
    for m in meshes:
        assert "weight-asymmetry" not in codes(m.findings), m.object
        assert m.metrics["mirror_matched_fraction"] == pytest.approx(1.0), m.object


def test_one_arm_mesh_alone_is_what_the_per_mesh_audit_saw(bpy, empty_scene):
    """The control: judged alone, Arm.L has no mirror vertex and leaves the other arm's bones idle."""
    from skin_audit.blender.run.audit_scene import audit_meshes

    parts = split_character()
    (alone,) = audit_meshes(bpy.context, [parts["Arm.L"]], AuditOptions())
    assert {"mesh-not-symmetric", "deform-bone-without-weights"} <= codes(alone.findings)
    idle = next(f for f in alone.findings if f.code == "deform-bone-without-weights")
    assert set(idle.bones) == {"spine", "upper_arm.R", "forearm.R"}


def test_asymmetric_weights_are_found_across_meshes(bpy, empty_scene):
    parts = split_character()
    arm_r = parts["Arm.R"]
    verts = np.array([v.co for v in arm_r.data.vertices])
    changed = np.flatnonzero(np.abs(verts[:, 0]) > 0.6)  # the right hand end
    upper, lower = arm_r.vertex_groups["upper_arm.R"], arm_r.vertex_groups["forearm.R"]
    for i in changed.tolist():
        upper.add([i], 0.3, "REPLACE")
        lower.add([i], 0.7, "REPLACE")
    (rig,), meshes = audit_all(bpy)
    found = {m.object: next(f for f in m.findings if f.code == "weight-asymmetry")
             for m in meshes if "weight-asymmetry" in codes(m.findings)}
    assert set(found) == {"Arm.L", "Arm.R"}
    assert sorted(found["Arm.R"].vertices) == changed.tolist()
    assert found["Arm.R"].details["mirror_object"] == "Arm.L"
    assert found["Arm.L"].details["mirror_object"] == "Arm.R"
    assert found["Arm.R"].details["worst_difference"] == pytest.approx(0.3, abs=1e-6)
    assert rig.metrics["max_weight_asymmetry"] == pytest.approx(0.3, abs=1e-6)


def test_the_armature_is_reported_once_for_all_its_meshes(bpy, empty_scene):
    parts = split_character()
    parts["rig"].scale = (1.0, 2.0, 1.0)
    rigs, meshes = audit_all(bpy)
    (rig,) = rigs
    assert [f.code for f in rig.findings].count("non-uniform-armature-scale") == 1
    assert all("non-uniform-armature-scale" not in codes(m.findings) for m in meshes)


# ------------------------------------------------------------------ helper bones


HELPER_RIG = (
    Bone("root", (0.0, 0.0, 0.0), (0.0, 0.3, 0.0), deform=False),
    Bone("properties", (0.0, 0.5, 0.0), (0.0, 0.7, 0.0), deform=False),
    Bone("DEF-spine", (0.0, 0.0, 0.6), (0.0, 0.0, 1.0), "root"),
    Bone("ORG-shoulder.L", (0.05, 0.0, 1.0), (0.15, 0.0, 1.0), "DEF-spine", deform=False),
    Bone("ORG-shoulder.R", (-0.05, 0.0, 1.0), (-0.15, 0.0, 1.0), "DEF-spine", deform=False),
    Bone("DEF-arm.L", (0.15, 0.0, 1.0), (0.75, 0.0, 1.0), "ORG-shoulder.L"),
    Bone("DEF-arm.R", (-0.15, 0.0, 1.0), (-0.75, 0.0, 1.0), "ORG-shoulder.R"),
    # Helpers a rigging system keeps: unpaired, and a pair that is no mirror image.
    Bone("MCH-ik_target.L", (0.75, 0.2, 1.0), (0.75, 0.4, 1.0), "root", deform=False),
    Bone("MCH-roll.L", (0.2, 0.1, 0.0), (0.2, 0.3, 0.0), "root", deform=False, roll=0.0),
    Bone("MCH-roll.R", (-0.2, 0.1, 0.0), (-0.2, 0.3, 0.0), "root", deform=False, roll=1.0),
)


def helper_character(extra=()):
    rig = armature("Rig", (*HELPER_RIG, *extra))
    body_v, body_f = tube(-0.15, 0.15, rings=4, radius=0.12)
    mesh("Body", body_v, body_f, {"DEF-spine": (range(len(body_v)), [1.0] * len(body_v))}, rig)
    for side, (x0, x1) in (("L", (0.15, 0.75)), ("R", (-0.75, -0.15))):
        v, f = tube(x0, x1, rings=7)
        mesh(f"Arm.{side}", v, f, {f"DEF-arm.{side}": (range(len(v)), [1.0] * len(v))}, rig)
    return rig


def test_helper_bones_are_not_judged(bpy, empty_scene):
    """The whole tree has two roots, an unpaired side bone and a rolled pair, all helpers; the
    deform hierarchy (DEF-arm.* re-parented through ORG-shoulder.* to DEF-spine) is clean."""
    helper_character()
    (rig,), meshes = audit_all(bpy)
    assert rig.metrics["deform_roots"] == 1 and rig.metrics["bones"] == len(HELPER_RIG)
    assert not codes(rig.findings) & {"unpaired-side-bone", "mirror-axis-mismatch"}
    # The helper roots are told, as INFO: only an exporter writing every bone writes them.
    (roots,) = [f for f in rig.findings if f.code == "multiple-root-bones"]
    assert roots.severity == "INFO" and set(roots.bones) == {"root", "properties"}
    assert all(f.severity == "INFO" for f in rig.findings)
    for m in meshes:
        assert "weight-asymmetry" not in codes(m.findings)


def test_a_deform_bone_under_a_helper_root_is_a_second_root(bpy, empty_scene):
    helper_character((Bone("DEF-tail", (0.0, 0.1, 0.6), (0.0, 0.4, 0.5), "properties"),))
    (rig,), _ = audit_all(bpy, target="unreal")
    (roots,) = [f for f in rig.findings if f.code == "multiple-root-bones"]
    assert roots.severity == "WARNING" and set(roots.bones) == {"DEF-spine", "DEF-tail"}
    assert roots.details["helper_parents"] == ["properties", "root"]
    # glTF asks only for a common ancestor of a skin's joints: INFO for three.js.
    (rig,), _ = audit_all(bpy)
    assert [f.severity for f in rig.findings if f.code == "multiple-root-bones"] == ["INFO"]


@pytest.mark.parametrize(("roll_r", "severity"), [(0.0, None), (math.pi, "INFO"), (math.pi / 6, "WARNING")])
def test_a_deform_pair_along_the_mirror_axis(bpy, empty_scene, roll_r, severity):
    """Bones along X (the mirror axis) have two mirror images half a turn about their own axis
    apart: Blender's (roll 0 for roll 0) and the other (roll 180), told as INFO; a 30-degree roll
    is a mismatch."""
    heels = (Bone("DEF-heel.L", (0.06, 0.05, 0.0), (0.14, 0.05, 0.0), "DEF-spine"),
             Bone("DEF-heel.R", (-0.06, 0.05, 0.0), (-0.14, 0.05, 0.0), "DEF-spine", roll=roll_r))
    helper_character(heels)
    (rig,), _ = audit_all(bpy)
    found = [f for f in rig.findings if f.code == "mirror-axis-mismatch"]
    assert [f.severity for f in found] == ([severity] if severity else []), [f.message for f in found]
    if severity:
        assert set(found[0].bones) == {"DEF-heel.L", "DEF-heel.R"}
        angle = 180.0 if severity == "INFO" else 30.0
        assert found[0].details["worst_angle_degrees"] == pytest.approx(angle, abs=0.01)
        assert found[0].details.get("along_mirror_axis", False) == (severity == "INFO")


# ------------------------------------------------------------------ armature-modifier-missing


def _simple_rig():
    rig = armature("Rig", (Bone("spine", (0.0, 0.0, 0.6), (0.0, 0.0, 1.0)),
                           Bone("arm.L", (0.15, 0.0, 1.0), (0.75, 0.0, 1.0), "spine")))
    v, f = tube(0.15, 0.75, rings=5)
    return rig, v, f


def _missing(rig_audits):
    return {f.details["object"]: f for r in rig_audits for f in r.findings if f.code == "armature-modifier-missing"}


def test_mesh_parented_to_the_armature_without_modifier(bpy, empty_scene):
    rig, v, f = _simple_rig()
    mesh("Skinned", v, f, arm_weights(v, "spine", "arm.L", 0.45), rig)
    mesh("Prop", v + [0.0, 0.5, 0.0], f, rig=rig, modifier=False)
    rigs, meshes = audit_all(bpy)
    (rig_audit,) = rigs
    assert [m.object for m in meshes] == ["Skinned"]
    (prop,) = _missing(rigs).values()
    assert prop.details["object"] == "Prop" and prop.severity == "WARNING"
    assert "parented to armature 'Rig'" in prop.message


def test_weighted_mesh_with_a_disabled_modifier_is_an_error(bpy, empty_scene):
    rig, v, f = _simple_rig()
    body = mesh("Body", v, f, arm_weights(v, "spine", "arm.L", 0.45), rig)
    body.modifiers["Armature"].show_viewport = False
    loose = mesh("Loose", v + [0.0, 0.5, 0.0], f, arm_weights(v, "spine", "arm.L", 0.45))  # groups only
    rigs, meshes = audit_all(bpy)
    assert meshes == ()
    missing = _missing(rigs)
    assert set(missing) == {"Body", "Loose"}
    assert missing["Body"].severity == "ERROR" and "disabled" in missing["Body"].message
    assert set(missing["Body"].bones) == {"spine", "arm.L"}
    assert missing["Loose"].severity == "ERROR" and "named after bones of 'Rig'" in missing["Loose"].message
    assert loose.parent is None


def test_bone_parented_mesh_is_rigid_and_fine(bpy, empty_scene):
    rig, v, f = _simple_rig()
    mesh("Skinned", v, f, arm_weights(v, "spine", "arm.L", 0.45), rig)
    helmet = mesh("Helmet", v + [0.0, 0.0, 0.3], f, rig=rig, modifier=False, parent_bone="spine")
    assert helmet.parent_type == "BONE"
    rigs, _ = audit_all(bpy)
    assert _missing(rigs) == {}


def test_a_file_with_only_a_mesh_missing_its_modifier_is_audited(bpy, empty_scene, tmp_path):
    """Formerly 'not a rig' (exit 2): now an ok file whose rig entry carries the ERROR."""
    from skin_audit.blender.run.audit_files import audit_file

    rig, v, f = _simple_rig()
    body = mesh("Body", v, f, arm_weights(v, "spine", "arm.L", 0.45), rig)
    body.modifiers.remove(body.modifiers["Armature"])
    path = tmp_path / "missing_modifier.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    result = audit_file(path, AuditOptions())
    assert result.status == "ok", result.message
    assert result.meshes == () and [r.armature for r in result.rigs] == ["Rig"]
    (finding,) = result.rigs[0].findings
    assert finding.code == "armature-modifier-missing" and finding.severity == "ERROR"
    assert result.to_dict()["rigs"][0]["meshes"] == []


# ------------------------------------------------------------------ the rig moves bones together


def _twist_rig(bpy):
    """An arm along Z: 'hand' twists; 'twist' copies its Y rotation (a twist bone) and 'roller'
    has a driver reading it; the mesh blends arm -> hand."""
    rig = armature("Rig", (Bone("arm", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
                           Bone("hand", (0.0, 0.0, 1.0), (0.0, 0.0, 2.0), "arm"),
                           Bone("twist", (0.0, 0.0, 0.5), (0.0, 0.0, 1.0), "arm"),
                           Bone("roller", (0.0, 0.2, 0.5), (0.0, 0.2, 1.0), "arm")))
    con = rig.pose.bones["twist"].constraints.new("COPY_ROTATION")
    con.target, con.subtarget = rig, "hand"
    con.use_x = con.use_z = False
    fc = rig.driver_add('pose.bones["roller"].bbone_rollin')
    var = fc.driver.variables.new()
    var.type = "TRANSFORMS"
    var.targets[0].id = rig
    var.targets[0].bone_target = "hand"
    var.targets[0].transform_type = "ROT_Y"
    fc.driver.expression = var.name
    angle = np.linspace(0.0, 2.0 * np.pi, 12, endpoint=False)
    z = np.linspace(0.0, 2.0, 9)
    verts = np.array([(0.3 * np.cos(a), 0.3 * np.sin(a), h) for h in z for a in angle])
    faces = [(r * 12 + s, r * 12 + (s + 1) % 12, (r + 1) * 12 + (s + 1) % 12, (r + 1) * 12 + s)
             for r in range(8) for s in range(12)]
    w = np.clip(verts[:, 2] / 2.0, 0.0, 1.0)
    idx = np.arange(len(verts))
    mesh("Arm", verts, faces, {"arm": (idx, 1.0 - w), "hand": (idx, w)}, rig)
    return rig


def test_constraint_and_driver_links_are_read(bpy, empty_scene):
    from skin_audit.blender.read.extract import read_bones

    rig = _twist_rig(bpy)
    bpy.context.view_layer.update()
    bones, _ = read_bones(rig.evaluated_get(bpy.context.evaluated_depsgraph_get()))
    links = dict(zip(bones.names, bones.driven_by, strict=True))
    assert links == {"arm": (), "hand": (), "twist": ("hand",), "roller": ("hand",)}
    assert bones.followers(bones.names.index("hand")) == ("twist", "roller")
    assert bones.followers(bones.names.index("twist")) == ()


def test_the_sweep_says_the_swept_bone_moves_others(bpy, empty_scene):
    """Twisting 'hand' alone collapses the mid-arm; the rig would turn 'twist' and 'roller' too."""
    _twist_rig(bpy)
    (rig,), (arm,) = audit_all(bpy)
    squash = [f for f in arm.findings if f.code == "twist-collapse"]
    assert squash and all(f.details["bone"] == "hand" for f in squash)
    for f in squash:
        assert "Swept alone; the rig would also move twist, roller" in f.message
        assert f.details["rig_also_moves"] == ["twist", "roller"] and f.details["rig_poses_it_from"] == []
