# SPDX-License-Identifier: GPL-3.0-or-later
"""A ``.vrm`` input (a VRM avatar: a glTF binary with VRM extensions) is audited as the glTF
binary it is: the same bytes named ``.glb`` give the same report.

The file is written here by Blender's own glTF exporter from a rig built here (a cylinder of
5 rings of 8 vertices on two bones), then copied byte for byte to a ``.vrm`` name.
"""

from __future__ import annotations

import shutil

import pytest

from skin_audit.core.audit.options import AuditOptions

pytestmark = pytest.mark.blender

V = 40


@pytest.fixture(scope="module")
def glb_and_vrm(bpy, tmp_path_factory):
    from tests.factories import blender_rigs as rb

    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        rb.chain_rig("Body")
        folder = tmp_path_factory.mktemp("vrm")
        glb = folder / "glb" / "body.glb"
        glb.parent.mkdir()
        bpy.ops.export_scene.gltf(filepath=str(glb), export_format="GLB", export_animations=False)
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    vrm = folder / "vrm" / "body.vrm"
    vrm.parent.mkdir()
    shutil.copyfile(glb, vrm)
    assert vrm.read_bytes()[:4] == b"glTF"
    return glb, vrm


def _audit(bpy, path):
    from skin_audit.blender.run.audit_files import audit_paths

    try:
        return audit_paths([str(path)], AuditOptions())
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)


def test_a_vrm_is_audited_like_the_same_glb(bpy, glb_and_vrm):
    glb, vrm = glb_and_vrm
    (as_glb,) = _audit(bpy, glb)
    (as_vrm,) = _audit(bpy, vrm)
    assert as_vrm.status == "ok", as_vrm.message
    (mesh,) = as_vrm.meshes
    assert mesh.vertices == V and mesh.metrics["vertices_compared"] == V
    # The glTF path ran: the file as stored was compared with Blender's import of it.
    assert "gltf_time" in mesh.metrics and "current" in mesh.metrics["engine_divergence_by_pose"]
    assert mesh.metrics == as_glb.meshes[0].metrics
    assert [(f.code, f.severity) for f in as_vrm.findings] == [(f.code, f.severity) for f in as_glb.findings]


def test_a_folder_audit_takes_its_vrm_files(bpy, glb_and_vrm):
    _, vrm = glb_and_vrm
    (fa,) = _audit(bpy, vrm.parent)
    assert fa.path == str(vrm) and fa.status == "ok", fa.message


def test_a_vrm_that_is_not_a_gltf_binary_is_refused_before_the_importer(bpy, tmp_path):
    bad = tmp_path / "avatar.vrm"
    bad.write_bytes(b'{"asset": {"version": "2.0"}}')  # glTF JSON, not the binary a .vrm is
    (fa,) = _audit(bpy, bad)
    assert fa.status == "error"
    assert "bad magic" in fa.message and "a .vrm must start with b'glTF'" in fa.message
