# SPDX-License-Identifier: GPL-3.0-or-later
"""Real engines for the engine tests: node + the npm packages pinned in package.json.

``engines_dir`` installs them once per session with ``npm ci`` into
tests/engines/node_modules (gitignored).  A missing node or npm fails the tests with
what to install: CI must run them, so nothing here skips.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ENGINES = Path(__file__).resolve().parent
#: Node's minimum for three.js r187 and the validator (ES modules, top-level await).
MIN_NODE_MAJOR = 18


def _fail(msg: str) -> None:
    pytest.fail(msg, pytrace=False)


@pytest.fixture(scope="session")
def engines_dir() -> Path:
    """tests/engines with its npm packages installed (``npm ci`` when missing or stale)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _fail(
            "the engine tests need Node.js 18+ and npm on PATH (missing: "
            f"{', '.join(n for n, p in (('node', node), ('npm', npm)) if p is None)}); install them "
            "(Debian: `apt-get install nodejs npm`) and run pytest again"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < MIN_NODE_MAJOR:
        _fail(f"node {version} is too old for the engine tests; install Node.js {MIN_NODE_MAJOR} or newer")
    stamp = ENGINES / "node_modules" / ".package-lock.json"
    lock = ENGINES / "package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=ENGINES, capture_output=True, text=True)
        if done.returncode != 0:
            _fail(
                f"`npm ci` in {ENGINES} failed (exit {done.returncode}); is the npm registry reachable?\n"
                f"{done.stderr[-2000:]}"
            )
    return ENGINES


def run_node(engines_dir: Path, script: str, *args: str) -> Any:
    """Run one of the harness scripts and return its JSON output."""
    done = subprocess.run(["node", str(engines_dir / script), *args], cwd=engines_dir, capture_output=True, text=True)
    if done.returncode != 0:
        _fail(f"node {script} {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)
