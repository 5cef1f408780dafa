# SPDX-License-Identifier: GPL-3.0-or-later
"""The extension tier: build the zip once, then run scenarios in fresh Blender processes.

Each scenario runs in its own ``sys.executable`` process (the venv's bpy, so
the bpy 4.2 run tests 4.2) with ``BLENDER_USER_RESOURCES`` pointing at a
temporary folder: the real Blender profile is never touched and this pytest
process never imports bpy or the installed extension.

Set ``SKIN_AUDIT_EXTENSION_ZIP`` to test an already built zip instead.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
BUILD_SCRIPT = ROOT / "scripts" / "build_extension.py"
DRIVER = HERE / "blender_driver.py"
#: A scenario is a few seconds; this only catches a hung Blender.
TIMEOUT = 300


def check_names(scenario: str) -> list[str]:
    """The ``check_*`` functions of a scenario file, in order, read without importing it."""
    tree = ast.parse((HERE / scenario).read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("check_")]


def run_build(output_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BUILD_SCRIPT), "--output-dir", str(output_dir), *args],
                          capture_output=True, text=True, timeout=TIMEOUT)


@pytest.fixture(scope="session")
def extension_zip(tmp_path_factory) -> Path:
    """The extension built from this checkout with Blender's tool (and validated)."""
    prebuilt = os.environ.get("SKIN_AUDIT_EXTENSION_ZIP")
    if prebuilt:
        return Path(prebuilt).resolve()
    proc = run_build(tmp_path_factory.mktemp("extension"))
    if proc.returncode != 0:
        pytest.fail(f"scripts/build_extension.py failed (exit {proc.returncode}):\n{proc.stderr}", pytrace=False)
    return Path(proc.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class ScenarioRun:
    results: dict
    returncode: int
    stdout: str
    stderr: str

    def require(self, check: str) -> None:
        """Fail with the check's own traceback, or with Blender's output if it never reported."""
        result = self.results.get(check)
        if result is None:
            pytest.fail(f"{check} did not report (exit {self.returncode}); Blender's stderr:\n"
                        f"{self.stderr[-4000:]}", pytrace=False)
        if not result["ok"]:
            pytest.fail(result["error"], pytrace=False)


def run_scenario(scenario: str, zip_path: Path, tmp: Path) -> ScenarioRun:
    """Run ``scenario`` in a fresh Blender-module process with a temporary user profile."""
    (tmp / "user").mkdir()
    (tmp / "work").mkdir()
    results_path = tmp / "results.json"
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp / "user"), SKIN_AUDIT_TEST_ZIP=str(zip_path),
               SKIN_AUDIT_TEST_WORK=str(tmp / "work"))
    env.pop("PYTHONPATH", None)  # the extension must come from the zip, not a checkout
    proc = subprocess.run([sys.executable, str(DRIVER), str(HERE / scenario), str(results_path)],
                          env=env, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.is_file() else {}
    return ScenarioRun(results, proc.returncode, proc.stdout, proc.stderr)


def pytest_generate_tests(metafunc):
    """``check`` runs over the ``check_*`` functions of the module's SCENARIO file."""
    if "check" in metafunc.fixturenames:
        metafunc.parametrize("check", check_names(metafunc.module.SCENARIO))


@pytest.fixture(scope="module")
def scenario(request, extension_zip, tmp_path_factory) -> ScenarioRun:
    """The module's SCENARIO file, run once in a fresh Blender process for all its checks."""
    name = request.module.SCENARIO
    return run_scenario(name, extension_zip, tmp_path_factory.mktemp(Path(name).stem))
