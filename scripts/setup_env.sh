#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Create the local virtual environments, idempotently (a stamp of each
# requirements file makes the second run a no-op).
#   .venv    bpy 5.0.1 + pytest, ruff, mypy, fake-bpy-module, Python 3.11  (always)
#   .venv42  bpy 4.2.0, the oldest Blender we claim, Python 3.11  (--matrix or --with-blender42)
#   .venv45  bpy 4.5 LTS, Python 3.11  (--matrix)
#   .venv52  bpy 5.2.3 LTS, Python 3.13 and numpy 2  (--matrix)
# Without Python 3.13 the .venv52 step says so and the others are still made;
# SKIN_AUDIT_REQUIRE_BLENDER52=1 (CI) turns that into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# find_python VERSION [CANDIDATE...]: the first candidate that is Python VERSION (e.g. 3.11).
find_python() {
    local version=$1 candidate
    shift
    for candidate in "$@"; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$version')" 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

# make_venv DIR REQUIREMENTS PYTHON
make_venv() {
    local dir=$1 requirements=$2 python=$3 stamp want
    stamp="$dir/.requirements.sha256"
    want=$(sha256sum "$requirements" | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dir/bin/python" ]; then
        return 0
    fi
    echo "skin_audit: setting up $dir from $requirements (bpy is a large download the first time)" >&2
    "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" >"$stamp"
}

PY311=$(find_python 3.11 "${PYTHON:-}" python3.11 python3) || {
    echo "skin_audit: Python 3.11 is required (the bpy 4.2-5.0 wheels are built for it); set PYTHON=/path/to/python3.11" >&2
    exit 1
}
make_venv .venv requirements-dev.txt "$PY311"

case "${1:-}" in
--with-blender42)
    make_venv .venv42 requirements-blender42.txt "$PY311"
    ;;
--matrix)
    make_venv .venv42 requirements-blender42.txt "$PY311"
    make_venv .venv45 requirements-blender45.txt "$PY311"
    pyenv_313=()
    if command -v pyenv >/dev/null 2>&1; then
        pyenv_313=("$(pyenv root)"/versions/3.13*/bin/python3.13)
    fi
    if PY313=$(find_python 3.13 "${PYTHON313:-}" python3.13 "${pyenv_313[@]}"); then
        make_venv .venv52 requirements-blender52.txt "$PY313"
    elif [ "${SKIN_AUDIT_REQUIRE_BLENDER52:-}" = "1" ]; then
        echo "skin_audit: SKIN_AUDIT_REQUIRE_BLENDER52=1 but no Python 3.13 was found (bpy 5.2 is built for it only); set PYTHON313=/path/to/python3.13" >&2
        exit 1
    else
        echo "skin_audit: no Python 3.13 found (bpy 5.2 is built for it only): .venv52 not made, the Blender 5.2 tier will be skipped; set PYTHON313=/path/to/python3.13" >&2
    fi
    ;;
"") ;;
*)
    echo "usage: bash scripts/setup_env.sh [--matrix | --with-blender42]" >&2
    exit 2
    ;;
esac
