# SPDX-License-Identifier: GPL-3.0-or-later
"""An ``.fbx`` input audited end to end: a rig built here, written by Blender's own FBX
exporter, read back by ``audit`` like any user's file.

What the audit must see is known from the rig we wrote: a cylinder of 5 rings of 8
vertices on two bones with normalised weights, Child's weight 0, 0.25, 0.5, 0.75, 1 by
ring (at most 2 influences), one Armature modifier.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions

pytestmark = pytest.mark.blender

REPO = Path(__file__).resolve().parents[2]
V = 40


@pytest.fixture(scope="module")
def fbx_file(bpy, tmp_path_factory):
    from tests.factories import blender_rigs as rb

    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        rb.chain_rig("Body")
        path = tmp_path_factory.mktemp("fbx") / "body.fbx"
        bpy.ops.export_scene.fbx(filepath=str(path), add_leaf_bones=False, bake_anim=False)
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    assert path.stat().st_size > 1000
    return path


def test_fbx_is_audited_and_compared(bpy, fbx_file):
    from skin_audit.blender.run.audit_files import audit_paths

    try:
        (fa,) = audit_paths([str(fbx_file)], AuditOptions())
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    assert fa.status == "ok", fa.message
    assert len(fa.meshes) == 1
    (mesh,) = fa.meshes
    assert mesh.vertices == V
    assert mesh.metrics["vertices_compared"] == V
    assert mesh.metrics["max_numpy_vs_blender"] <= 2e-6 * 2.0
    assert mesh.metrics["max_influences"] == 2 and mesh.metrics["unweighted_vertices"] == 0
    codes = {f.code for f in fa.findings}
    assert not codes & {"skinning-mismatch", "unweighted-vertices", "weights-not-normalized", "bind-pose-drift"}
    # The importer kept the weights: the per-vertex sums are 1.
    np.testing.assert_allclose(mesh.measures["weight_sum"], 1.0, atol=1e-6)


def test_fbx_through_the_command_line(fbx_file):
    result = subprocess.run([sys.executable, "-m", "skin_audit", "audit", str(fbx_file)], cwd=REPO,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "1 skinned mesh(es)" in result.stdout
