# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the skin_audit extension zip with Blender's own tool, and validate it.

    python scripts/build_extension.py [--output-dir build/extension] [--blender-ext PATH]

Stages ``blender_manifest.toml``, ``LICENSE`` and the contents of the
``skin_audit`` package (without tests, scripts, caches or hidden files) into
a clean temporary folder, runs ``blender_ext.py build`` on it and
``blender_ext.py validate`` on the zip, and prints the zip's path.  Exits
non-zero when any step fails.

``blender_ext.py`` is found in the installed ``bpy`` module (the newest
Blender version it carries) unless ``--blender-ext`` names it; a Blender
install has it in ``<version>/scripts/addons_core/bl_pkg/cli/``.  It needs
Python 3.11 or newer.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    sys.exit("build_extension: Python 3.11 or newer is needed (blender_ext.py reads TOML)")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "skin_audit"
TOOL = Path("scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py")
#: Never staged, at any depth of the package.
EXCLUDED = ("__pycache__", "*.pyc", ".*", "tests", "scripts")


class BuildError(Exception):
    pass


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in path.name.split(".") if p.isdigit())


def find_blender_ext() -> Path:
    """``blender_ext.py`` of the installed bpy module, newest Blender version first."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("cannot find Blender's blender_ext.py: install the bpy module or pass --blender-ext")
    for location in spec.submodule_search_locations:
        versions = sorted((p for p in Path(location).iterdir() if (p / TOOL).is_file()),
                          key=_version_key, reverse=True)
        if versions:
            return versions[0] / TOOL
    raise BuildError(f"the bpy module at {spec.submodule_search_locations[0]} has no {TOOL}; "
                     "pass --blender-ext")


def stage(root: Path, staging: Path) -> dict:
    """Copy the manifest, the licence and the package into ``staging``; return the manifest."""
    manifest_path = root / "blender_manifest.toml"
    try:
        manifest = tomllib.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BuildError(f"cannot read {manifest_path}: {exc}") from exc
    for name in ("blender_manifest.toml", "LICENSE"):
        if not (root / name).is_file():
            raise BuildError(f"{root / name} is missing")
        shutil.copy2(root / name, staging / name)
    package = root / PACKAGE
    if not (package / "__init__.py").is_file():
        raise BuildError(f"{package} is not a Python package")
    shutil.copytree(package, staging, ignore=shutil.ignore_patterns(*EXCLUDED), dirs_exist_ok=True)
    return manifest


def _run(tool: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(tool), *args], capture_output=True, text=True)
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise BuildError(f"blender_ext.py {args[0]} failed (exit {proc.returncode}):\n{output}")
    return output


def build(root: Path, output_dir: Path, tool: Path) -> Path:
    """Stage, build and validate; return the zip's path."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="skin_audit-stage-") as tmp:
        staging = Path(tmp, PACKAGE)
        staging.mkdir()
        manifest = stage(root, staging)
        zip_path = output_dir / f"{manifest.get('id')}-{manifest.get('version')}.zip"
        zip_path.unlink(missing_ok=True)
        _run(tool, "build", "--source-dir", str(staging), "--output-filepath", str(zip_path))
    if not zip_path.is_file():
        raise BuildError(f"blender_ext.py build reported success but wrote no {zip_path}")
    _run(tool, "validate", str(zip_path))
    return zip_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=ROOT / "build" / "extension",
                        help="folder for the zip (created if missing; default build/extension)")
    parser.add_argument("--blender-ext", type=Path, help="path of Blender's blender_ext.py")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to build from (default: this one)")
    args = parser.parse_args(argv)
    try:
        tool = args.blender_ext or find_blender_ext()
        if not tool.is_file():
            raise BuildError(f"{tool} does not exist")
        zip_path = build(args.root.resolve(), args.output_dir.resolve(), tool)
    except BuildError as exc:
        print(f"build_extension: {exc}", file=sys.stderr)
        return 1
    print(zip_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
