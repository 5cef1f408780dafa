#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The extension in a real windowed Blender: Debian trixie's Blender under Xvfb with Mesa's
# software OpenGL, inside a debootstrap chroot kept in a cache folder.
#
#     sudo bash scripts/windowed.sh [--prepare-only] [--out DIR]
#
# 1. Builds (once) a minimal Debian trixie root in $SKIN_AUDIT_WINDOWED_ROOT
#    (default .cache/trixie-root) with blender, xvfb, xauth, python3-numpy and x11-apps.
#    A finished root carries .skin_audit_ready and is re-used; a half-built one is removed.
# 2. Builds the extension zip (scripts/build_extension.py) and installs it as a user would:
#    blender --command extension install-file -r user_default -e ZIP
# 3. Runs `blender --command skin_audit audit` on a clean and a faulty rig (exit codes 0, 1).
# 4. Starts Blender under Xvfb with scripts/windowed_walk.py, which presses every panel
#    button with a real 3D-viewport context and asks for a screenshot (xwd -root) after
#    each step.  Fails on any Python traceback in Blender's console.
# Screenshots (PNG), the console log and a summary go to out/windowed/ (or --out DIR).
# Needs root (debootstrap, chroot, mount) and a Debian mirror; about 1.4 GiB of disk.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
ROOT=${SKIN_AUDIT_WINDOWED_ROOT:-$REPO/.cache/trixie-root}
MIRROR=${SKIN_AUDIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
OUT=$REPO/out/windowed
PREPARE_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --prepare-only) PREPARE_ONLY=1 ;;
        --out) OUT=$(realpath -m "$2"); shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "windowed.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
PACKAGES=(blender xvfb xauth python3-numpy x11-apps)

if [ "$(id -u)" != 0 ]; then
    echo "windowed.sh: needs root (debootstrap, chroot and mount)" >&2
    exit 2
fi
if [ ! -d "$ROOT" ] && ! command -v debootstrap >/dev/null 2>&1; then
    echo "windowed.sh: the chroot is not built yet and debootstrap is missing (apt-get install debootstrap)" >&2
    exit 3
fi

# Everything mounted under the root, innermost first; never delete a root with mounts in it.
unmount_all() {
    local root=$1 m
    for m in $(findmnt -rn -o TARGET | grep -F "$root/" | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}

mount_all() {
    local root=$1
    mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
    mountpoint -q "$root/sys" || mount -t sysfs sysfs "$root/sys"
    mountpoint -q "$root/dev" || mount --rbind /dev "$root/dev"
    # The repository and /tmp at the same paths inside: paths given to Blender mean the same there.
    # /tmp first: a repository under /tmp is then bound over what the chroot shows, never hidden.
    mkdir -p "$root/tmp"
    mountpoint -q "$root/tmp" || mount --bind /tmp "$root/tmp"
    mkdir -p "$root$REPO"
    mountpoint -q "$root$REPO" || mount --bind "$REPO" "$root$REPO"
    ln -sfn /proc/self/mounts "$root/etc/mtab"
}

remove_root() {
    local root=$1
    unmount_all "$root"
    if findmnt -rn -o TARGET | grep -qF "$root/"; then
        echo "windowed.sh: $root still has mounts; not removing it" >&2
        exit 3
    fi
    rm -rf --one-file-system "$root"
}

prepare_root() {
    if [ -f "$ROOT/.skin_audit_ready" ]; then
        echo "== chroot: re-using $ROOT"
        return
    fi
    local partial=$ROOT.partial start=$SECONDS
    [ -e "$partial" ] && remove_root "$partial"
    mkdir -p "$(dirname "$ROOT")"
    echo "== chroot: debootstrap trixie into $partial"
    debootstrap --variant=minbase trixie "$partial" "$MIRROR" >"$REPO/.cache/debootstrap.log" 2>&1 \
        || { echo "windowed.sh: debootstrap failed, see .cache/debootstrap.log" >&2; tail -5 "$REPO/.cache/debootstrap.log" >&2; exit 3; }
    echo "   debootstrap: $((SECONDS - start)) s"
    start=$SECONDS
    trap 'unmount_all "$partial"' EXIT
    mountpoint -q "$partial/proc" || mount -t proc proc "$partial/proc"
    mountpoint -q "$partial/sys" || mount -t sysfs sysfs "$partial/sys"
    mountpoint -q "$partial/dev" || mount --rbind /dev "$partial/dev"
    ln -sfn /proc/self/mounts "$partial/etc/mtab"
    chroot "$partial" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    chroot "$partial" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq "${PACKAGES[@]}" >"$REPO/.cache/apt.log" 2>&1 \
        || { echo "windowed.sh: apt-get install failed, see .cache/apt.log" >&2; tail -5 "$REPO/.cache/apt.log" >&2; exit 3; }
    chroot "$partial" apt-get clean
    echo "   packages: $((SECONDS - start)) s"
    unmount_all "$partial"
    trap - EXIT
    [ -e "$ROOT" ] && remove_root "$ROOT"
    touch "$partial/.skin_audit_ready"
    mv "$partial" "$ROOT"
    echo "   $(du -sh --one-file-system "$ROOT" | cut -f1) in $ROOT"
}

prepare_root
[ "$PREPARE_ONLY" = 1 ] && exit 0

# A `blender` for the tests that run a real binary (SKIN_AUDIT_BLENDER_43): Blender 4.3 in the
# chroot, in the caller's folder and environment; it needs the mounts, which stay while this
# script runs (KEEP_MOUNTED=1 leaves them after it).
WRAPPER=$REPO/.cache/blender-4.3
write_wrapper() {
    mkdir -p "$(dirname "$WRAPPER")"
    cat >"$WRAPPER" <<WRAP
#!/usr/bin/env bash
# Debian trixie's Blender 4.3 in $ROOT (written by scripts/windowed.sh).
exec chroot "$ROOT" /bin/sh -c 'cd "\$0" && exec blender "\$@"' "\$PWD" "\$@"
WRAP
    chmod +x "$WRAPPER"
}

mount_all "$ROOT"
write_wrapper
[ "${KEEP_MOUNTED:-0}" = 1 ] || trap 'unmount_all "$ROOT"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
LOG=$OUT/summary.txt
say() { echo "$*" | tee -a "$LOG"; }
failures=0
fail() { say "FAIL: $*"; failures=$((failures + 1)); }

say "== build the extension zip"
ZIP=$(.venv/bin/python scripts/build_extension.py --output-dir "$OUT/build" | tail -1)
say "   $ZIP"
PROFILE=$(mktemp -d /tmp/skin-audit-windowed.XXXXXX)
export BLENDER_USER_RESOURCES=$PROFILE/user LIBGL_ALWAYS_SOFTWARE=1
RIG=$REPO/tests/assets/RiggedFigure/glTF-Binary/RiggedFigure.glb

say "== install it as a user would: blender --command extension install-file -r user_default -e ZIP"
"$WRAPPER" --command extension install-file -r user_default -e "$ZIP" >"$OUT/install.log" 2>&1 \
    || fail "extension install-file exited $? (see install.log)"

say "== blender --command skin_audit audit: exit codes"
expect_exit() {
    local want=$1 name=$2; shift 2
    local got=0
    "$WRAPPER" --command skin_audit audit "$@" >"$OUT/$name.log" 2>&1 || got=$?
    say "   skin_audit audit $* -> exit $got (expected $want)"
    [ "$got" = "$want" ] || fail "blender --command skin_audit audit $* exited $got, expected $want ($name.log)"
}
expect_exit 0 command-clean "$RIG" --json "$OUT/command-report.json"
expect_exit 1 command-findings "$RIG" --fail-on warning
expect_exit 2 command-missing "$OUT/no-such-rig.glb"

say "== the walk: Blender under Xvfb, every panel button"
start=$SECONDS
walk=0
timeout 1200 chroot "$ROOT" /bin/sh -c 'cd "$0" && exec xvfb-run -a -s "-screen 0 1600x900x24" \
    blender --window-geometry 0 0 1600 900 --no-window-focus --python scripts/windowed_walk.py -- "$1" "$2"' \
    "$REPO" "$OUT" "$RIG" >"$OUT/blender-console.log" 2>&1 || walk=$?
say "   Blender exited $walk after $((SECONDS - start)) s"
grep -E "^windowed walk:" "$OUT/blender-console.log" | tee -a "$LOG"
[ "$walk" = 0 ] || fail "the walk exited $walk (see blender-console.log, walk.json)"
if grep -q "Traceback (most recent call last)" "$OUT/blender-console.log"; then
    fail "a traceback in Blender's console (blender-console.log)"
fi
.venv/bin/python scripts/windowed_xwd.py "$OUT" | tee -a "$LOG"
rm -rf "$PROFILE"

if [ -f tests/extension/test_blender_command.py ]; then
    say "== the real-binary blender --command tests, through Blender 4.3 in the chroot"
    SKIN_AUDIT_BLENDER_43=$WRAPPER nice .venv/bin/python -m pytest -q -p no:cacheprovider \
        tests/extension/test_blender_command.py >"$OUT/blender-command-tests.log" 2>&1 \
        || fail "tests/extension/test_blender_command.py (blender-command-tests.log)"
    tail -1 "$OUT/blender-command-tests.log" | tee -a "$LOG"
fi

if [ "$failures" -gt 0 ]; then
    say "windowed: $failures failure(s); screenshots and logs in $OUT"
    exit 1
fi
say "windowed: all passed; screenshots and logs in $OUT"
