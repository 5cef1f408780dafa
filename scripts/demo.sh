#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Set everything up and run the twist experiment; outputs go to out/twist/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
OUT=${1:-out/twist}
mkdir -p "$OUT"
.venv/bin/python -m skin_audit demo --out "$OUT" "${@:2}"
.venv/bin/python -m skin_audit verify "$OUT/twist_scene.json"
