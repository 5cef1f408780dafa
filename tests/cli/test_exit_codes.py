# SPDX-License-Identifier: GPL-3.0-or-later
"""Every exit code the README documents, produced for real in a subprocess.

0 nothing at or above ``--fail-on``; 1 a real ERROR finding under the default
gate (``--fail-on error``); 2 bad usage or a file that cannot be audited; 3 an
internal error in the Blender script (provoked by replacing the command line's
``main`` inside a wrapper process, so the script's own handler is what runs), and
an internal error while auditing one file of a run (the core's per-character audit
replaced for one mesh, so the per-file guard is what meets it).
The rigs are built here with the real bpy and saved to a temporary .blend.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "skin_audit_blender.py"


def run(*args: str | Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skin_audit", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, check=False)


def explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def rigs(bpy, tmp_path_factory):
    """.blend files: a clean skinned cylinder, the same with its bottom ring unweighted (ERROR), and
    the clean one with its mesh named 'Broken'."""
    from tests.factories import blender_rigs as rb

    out = tmp_path_factory.mktemp("exit_codes")
    paths = {}
    for name in ("clean", "unweighted", "broken"):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        verts, faces = rb.cylinder(5, 8, 0.5, 2.0)
        weights = rb.chain_weights(verts[:, 2], ("Root", "Child"), 2.0)
        if name == "unweighted":
            bottom = np.arange(8)
            weights = {g: (idx[~np.isin(idx, bottom)], w[~np.isin(idx, bottom)]) for g, (idx, w) in weights.items()}
        # "broken": the same clean rig, its mesh named for the injected per-file fault below.
        mesh, arm = rb.build_rig("Broken" if name == "broken" else "Body", rb.chain_bones(("Root", "Child"), 2.0),
                                 verts, faces, weights)
        arm.pose.bones["Child"].rotation_mode = "XYZ"
        arm.pose.bones["Child"].rotation_euler = (0.4, 0.0, 0.0)
        paths[name] = out / f"{name}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(paths[name]), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return paths


@pytest.mark.blender
def test_exit_0_when_nothing_reaches_the_default_gate(rigs):
    result = run("audit", rigs["clean"])
    assert result.returncode == 0, explain(result)
    assert "[ERROR]" not in result.stdout


@pytest.mark.blender
def test_exit_1_under_the_default_gate_with_a_real_error(rigs):
    result = run("audit", rigs["unweighted"])  # no --fail-on: the default is error
    assert result.returncode == 1, explain(result)
    assert "[ERROR] unweighted-vertices: 8 vertices" in result.stdout
    never = run("audit", rigs["unweighted"], "--fail-on", "never")
    assert never.returncode == 0, explain(never)


@pytest.mark.blender
def test_exit_2_for_a_file_that_cannot_be_audited_even_beside_an_error(rigs, tmp_path):
    result = run("audit", rigs["unweighted"], tmp_path / "missing.blend")
    assert result.returncode == 2, explain(result)


@pytest.mark.parametrize("args", [("audit",), ("audit", "x.blend", "--fail-on", "sometimes"), ("frobnicate",)])
def test_exit_2_for_bad_usage(args):
    result = run(*args, timeout=60)
    assert result.returncode == 2, explain(result)
    assert "usage:" in result.stderr


WRAPPER = r"""
import runpy
import sys

import skin_audit.cli


def broken_main(argv=None, out=None, err=None):
    raise RuntimeError("injected internal error")


skin_audit.cli.main = broken_main
script = sys.argv[1]
sys.argv = ["blender", "--background", "--python", script, "--", "verify", "nothing.json"]
runpy.run_path(script, run_name="__main__")
"""


def test_exit_3_for_an_internal_error_in_the_blender_script():
    """The script's own handler turns an unexpected exception into exit 3 with its traceback."""
    result = subprocess.run([sys.executable, "-c", WRAPPER, str(SCRIPT)], cwd=REPO, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 3, explain(result)
    assert "RuntimeError: injected internal error" in result.stderr and "Traceback" in result.stderr


def test_the_blender_script_passes_the_command_lines_own_codes_through(tmp_path):
    """Bad input inside the script is 2, not 3: only a bug is an internal error."""
    wrapper = WRAPPER.replace("skin_audit.cli.main = broken_main\n", "")
    missing = tmp_path / "missing.json"
    result = subprocess.run([sys.executable, "-c", wrapper.replace("nothing.json", str(missing)), str(SCRIPT)],
                            cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2, explain(result)


MODULE_WRAPPER = r"""
import runpy
import sys

import skin_audit.cli


def broken(args, out):
    raise RuntimeError("injected internal error")


skin_audit.cli.COMMANDS["verify"] = broken
sys.argv = ["skin_audit", "verify", "nothing.json"]
runpy.run_module("skin_audit", run_name="__main__")
"""


def test_exit_3_for_an_internal_error_in_python_m_skin_audit():
    """A bug in a command is 3 with the traceback, never 1 (findings) or 2 (bad input)."""
    result = subprocess.run([sys.executable, "-c", MODULE_WRAPPER], cwd=REPO, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 3, explain(result)
    assert "RuntimeError: injected internal error" in result.stderr


PER_FILE_WRAPPER = r"""
import runpy
import sys

import skin_audit.blender.run.audit_scene as audit_scene

real = audit_scene.audit_character


def audit_character(armature, meshes, *args, **kwargs):
    # The core's audit of one character, failing on the mesh named Broken only: a bug inside one
    # file of the run, met by the per-file guard, never by main's handler.
    if any(m.object == "Broken" for m in meshes):
        raise RuntimeError("injected internal error on one file")
    return real(armature, meshes, *args, **kwargs)


audit_scene.audit_character = audit_character
sys.argv = ["skin_audit", *sys.argv[1:]]
runpy.run_module("skin_audit", run_name="__main__")
"""


@pytest.mark.blender
def test_exit_3_for_an_internal_error_inside_one_file_of_a_run(rigs, tmp_path):
    """The bug costs its own file only (the report holds the others), and the run exits 3, not 2."""
    report = tmp_path / "report.json"
    # --html keeps both files in this process, where the fault is injected.
    args = ["audit", str(rigs["clean"]), str(rigs["broken"]), "--json", str(report), "--html", str(tmp_path / "r.html")]
    result = subprocess.run([sys.executable, "-c", PER_FILE_WRAPPER, *args], cwd=REPO, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 3, explain(result)
    assert f"internal error on {rigs['broken']}" in result.stderr and "Traceback" in result.stderr
    import json

    clean, broken = json.loads(report.read_text())["files"]
    assert clean["status"] == "ok" and "error_kind" not in clean
    assert [m["object"] for m in clean["meshes"]] == ["Body"]
    assert (broken["status"], broken["error_kind"]) == ("error", "internal")
    assert broken["message"].startswith(f"{rigs['broken']}: internal error (a skin_audit bug; please report it): "
                                        "RuntimeError: injected internal error on one file"), broken["message"]
    # One file alone (audited in this process without --html): the same 3.
    alone = subprocess.run([sys.executable, "-c", PER_FILE_WRAPPER, "audit", str(rigs["broken"])], cwd=REPO,
                           capture_output=True, text=True, timeout=300, check=False)
    assert alone.returncode == 3, explain(alone)
