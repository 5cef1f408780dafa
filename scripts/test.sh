#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set up and run every check on every Blender the project supports:
#   lint and types;
#   bpy 5.0.1 (.venv): every test, including those that run a `blender` executable on PATH;
#   bpy 4.2.0 (.venv42, the oldest Blender the manifest claims) and bpy 4.5 LTS (.venv45):
#     the Blender tests marked blender42;
#   bpy 5.2.3 LTS (.venv52: Python 3.13, numpy 2): the core, audit, Blender, shape, rig,
#     hostile-input and extension tiers.  Without Python 3.13 this step says so and the
#     others still run; SKIN_AUDIT_REQUIRE_BLENDER52=1 (CI) makes it a failure.
# Arguments go to every pytest run (e.g. -x, -k EXPR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --matrix

echo "== ruff"
.venv/bin/ruff check skin_audit tests scripts
echo "== mypy (core, strict)"
.venv/bin/mypy
echo "== pytest, bpy 5.0.1"
.venv/bin/python -m pytest -q "$@"
echo "== pytest, bpy 4.2.0 (oldest supported Blender)"
.venv42/bin/python -m pytest -q -m blender42 "$@"
echo "== pytest, bpy 4.5 LTS"
.venv45/bin/python -m pytest -q -m blender42 "$@"
if [ -x .venv52/bin/python ]; then
    echo "== pytest, bpy 5.2.3 LTS (Python 3.13, numpy 2)"
    .venv52/bin/python -m pytest -q tests/core tests/audit tests/blender tests/shape tests/rigs tests/hostile \
        tests/extension "$@"
else
    echo "== pytest, bpy 5.2.3 LTS: skipped, no Python 3.13 (bpy 5.2 is built for it only); set PYTHON313=/path/to/python3.13 and run again"
fi
