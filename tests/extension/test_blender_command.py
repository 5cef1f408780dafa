# SPDX-License-Identifier: GPL-3.0-or-later
"""``blender --command skin_audit ...`` through a real Blender binary, the extension installed
from its zip as a user installs it (``blender --command extension install-file``).

The executable is the one SKIN_AUDIT_BLENDER_43 names (Debian trixie's Blender 4.3 in CI, run in
a chroot through a wrapper); without it these tests are skipped: the bpy module has no
``--command``, and Debian bookworm's Blender 3.4 neither (tests/cli/test_system_blender.py runs
the same handler in it).  The binary is given paths under the system's temporary folder only
and runs there (the zip, a copy of the rig, the reports): a wrapper running Blender in a chroot
must show that folder at the same path.  The Blender profile is a temporary folder
(BLENDER_USER_RESOURCES); the user's is never touched.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.blender_executables import blender_43, blender_env

REPO = Path(__file__).resolve().parents[2]
CYLINDER = REPO / "tests" / "assets" / "BlenderIO_03_skinned_cylinder" / "03_skinned_cylinder.blend"
TIMEOUT = 600  # a software-rendered Blender in a chroot starts slowly; this only catches a hang


@pytest.fixture(scope="module")
def installed(request, tmp_path_factory):
    """(executable, environment) with the extension installed from its zip into a fresh profile."""
    exe = blender_43()  # skips before the zip is built
    extension_zip = request.getfixturevalue("extension_zip")
    profile = tmp_path_factory.mktemp("blender_command_profile")
    env = dict(blender_env(), BLENDER_USER_RESOURCES=str(profile))
    env.pop("PYTHONPATH", None)  # the extension comes from the zip, never from this checkout
    result = subprocess.run([exe, "--command", "extension", "install-file", "-r", "user_default", "-e",
                             str(extension_zip)], env=env, cwd=profile, capture_output=True, text=True,
                            timeout=TIMEOUT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return exe, env


def command(installed, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe, env = installed
    return subprocess.run([exe, "--command", "skin_audit", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)


@pytest.mark.parametrize(("fail_on", "code"), [("warning", 1), ("error", 0)])
def test_audit_exits_with_the_findings_code(installed, tmp_path, fail_on, code):
    """The cylinder has one WARNING for the ``raw`` target, which keeps the weights' sums as stored
    (weights not summing to 1), and no ERROR."""
    rig = shutil.copy(CYLINDER, tmp_path / CYLINDER.name)
    out = tmp_path / "report.json"
    result = command(installed, tmp_path, "audit", str(rig), "--target", "raw", "--fail-on", fail_on,
                     "--json", str(out))
    told = result.stdout + result.stderr
    assert result.returncode == code, told
    assert "internal error" not in told and "Traceback" not in told, told
    (mesh,) = json.loads(out.read_text(encoding="utf-8"))["files"][0]["meshes"]
    f = {f["code"]: f for f in mesh["findings"]}["weights-not-normalized"]
    assert (f["severity"], f["count"]) == ("WARNING", 160)
    assert "weights-not-normalized" in result.stdout


def test_bad_input_exits_2(installed, tmp_path):
    missing = tmp_path / "missing.blend"
    result = command(installed, tmp_path, "audit", str(missing))
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(missing) in result.stdout + result.stderr


def test_demo_writes_its_files(installed, tmp_path):
    out = tmp_path / "twist"
    out.mkdir()
    result = command(installed, tmp_path, "demo", "--out", str(out), "--angles", "0,180")
    assert result.returncode == 0, result.stdout + result.stderr
    assert {p.name for p in out.iterdir()} >= {"twist_scene.json", "twist_radii.csv"}
