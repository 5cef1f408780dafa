# SPDX-License-Identifier: GPL-3.0-or-later
"""skin_audit.core never imports bpy: proven in a fresh interpreter where bpy cannot be
imported, and by reading the source."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import skin_audit.core

ROOT = Path(__file__).resolve().parents[2]
CORE = Path(skin_audit.core.__file__).resolve().parent

CHILD = r"""
import importlib, json, pkgutil, sys
sys.modules["bpy"] = None  # any `import bpy` now raises ImportError
try:
    import bpy  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("the bpy blocker does not work")
import skin_audit.core
names = [m.name for m in pkgutil.walk_packages(skin_audit.core.__path__, "skin_audit.core.")]
for name in names:
    importlib.import_module(name)
importlib.import_module("skin_audit.cli")
from skin_audit.core.twist.seed import seed_figures
f = seed_figures()
loaded = sorted(m for m in sys.modules if m == "bpy" or m.startswith("bpy.") or m.startswith("bl_"))
print(json.dumps({"modules": names, "mid": f.mid_ring_radius, "drift": f.bind_drift,
                  "bpy_entries": [m for m in loaded if sys.modules[m] is not None]}))
"""


def run_child() -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_core_module_and_the_cli_import_and_run_without_bpy():
    out = run_child()
    on_disk = {"skin_audit.core." + ".".join(p.relative_to(CORE).with_suffix("").parts)
               for p in CORE.rglob("*.py") if p.stem != "__init__"}
    assert set(out["modules"]) >= on_disk  # the walk really covered every file
    assert {"skin_audit.core.maths.lbs", "skin_audit.core.maths.dqs", "skin_audit.core.twist.verify"} <= on_disk
    assert out["bpy_entries"] == []
    assert out["drift"] < 1e-12
    assert abs(out["mid"][1] - 0.5**0.5) < 1e-15


def test_no_core_source_file_imports_bpy():
    pattern = re.compile(
        r"^\s*(import\s+bpy\b|from\s+bpy\b)|import_module\(\s*['\"]bpy|__import__\(\s*['\"]bpy", re.MULTILINE
    )
    files = sorted(CORE.rglob("*.py"))
    assert len(files) >= 15
    offenders = [str(p.relative_to(ROOT)) for p in files if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    # The pattern does catch the forms it is meant to catch.
    for line in ("import bpy", "    from bpy.types import Operator", "import bpy, numpy",
                 "importlib.import_module('bpy')"):
        assert pattern.search(line), line


def test_audit_and_twist_never_import_each_other():
    """The two products share core/maths and the shared modules, nothing else."""
    pattern = {"audit": re.compile(r"^\s*from\s+(\.\.twist|skin_audit\.core\.twist)\b", re.MULTILINE),
               "twist": re.compile(r"^\s*from\s+(\.\.audit|skin_audit\.core\.audit)\b", re.MULTILINE)}
    for part, forbidden in pattern.items():
        files = sorted((CORE / part).rglob("*.py"))
        assert len(files) >= 5, part
        offenders = [p.name for p in files if forbidden.search(p.read_text(encoding="utf-8"))]
        assert offenders == [], f"core/{part} imports the other product: {offenders}"
    # maths imports neither.
    maths = sorted((CORE / "maths").rglob("*.py"))
    assert len(maths) >= 5
    assert [p.name for p in maths if re.search(r"^\s*from\s+\.\.(audit|twist)\b", p.read_text(), re.MULTILINE)] == []
