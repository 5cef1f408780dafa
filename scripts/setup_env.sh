#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Create the local virtual environments, idempotently (a stamp of each
# requirements file makes the second run a no-op).
#   .venv    bpy 5.0.1 + pytest, ruff, mypy, fake-bpy-module  (always)
#   .venv42  bpy 4.2.0 + pytest, the oldest Blender we claim  (with --with-blender42)
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
    for candidate in "${PYTHON:-}" python3.11 python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "skin_audit: Python 3.11 is required (the bpy wheels are built for it); set PYTHON=/path/to/python3.11" >&2
    return 1
}

make_venv() {
    local dir=$1 requirements=$2 stamp want
    stamp="$dir/.requirements.sha256"
    want=$(sha256sum "$requirements" | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dir/bin/python" ]; then
        return 0
    fi
    echo "skin_audit: setting up $dir from $requirements (bpy is a large download the first time)" >&2
    "$PY" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" >"$stamp"
}

PY=$(find_python)
make_venv .venv requirements-dev.txt
if [ "${1:-}" = "--with-blender42" ]; then
    make_venv .venv42 requirements-blender42.txt
fi
