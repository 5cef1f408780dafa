# SPDX-License-Identifier: GPL-3.0-or-later
"""Every exit code the README documents, produced for real in a subprocess.

0 nothing at or above ``--fail-on``; 1 a real ERROR finding under the default
gate (``--fail-on error``); 2 bad usage or a file that cannot be audited; 3 an
internal error in the Blender script (provoked by replacing the command line's
``main`` inside a wrapper process, so the script's own handler is what runs).
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
    """Two .blend files: a clean skinned cylinder, and the same with its bottom ring unweighted (ERROR)."""
    from tests.factories import blender_rigs as rb

    out = tmp_path_factory.mktemp("exit_codes")
    paths = {}
    for name in ("clean", "unweighted"):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        verts, faces = rb.cylinder(5, 8, 0.5, 2.0)
        weights = rb.chain_weights(verts[:, 2], ("Root", "Child"), 2.0)
        if name == "unweighted":
            bottom = np.arange(8)
            weights = {g: (idx[~np.isin(idx, bottom)], w[~np.isin(idx, bottom)]) for g, (idx, w) in weights.items()}
        mesh, arm = rb.build_rig("Body", rb.chain_bones(("Root", "Child"), 2.0), verts, faces, weights)
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
