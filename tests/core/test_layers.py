# SPDX-License-Identifier: GPL-3.0-or-later
"""The layers import downwards only (docs/architecture.md): nothing below the command line
imports it, ``batch/`` never imports ``cli.py``, and no layer reads the package root."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import skin_audit

PACKAGE = Path(skin_audit.__file__).parent
TOP = {"cli", "batch", "blender_command", "__main__"}


@cache
def _imports(path: Path) -> frozenset[str]:
    """Every module ``path`` imports, as a dotted name inside the package ('' = the root)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            if node.module:
                out.add(".".join([*base, node.module]))
            else:
                out.update(".".join([*base, alias.name]) for alias in node.names)
    return frozenset(out)


def _is_module(name: str) -> bool:
    target = PACKAGE.joinpath(*name.split("."))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def test_no_layer_below_the_command_line_imports_it():
    for path in PACKAGE.rglob("*.py"):
        top = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if top in TOP or path.parent == PACKAGE:
            continue
        upward = {name for name in _imports(path) if name.split(".")[0] in TOP}
        assert not upward, (path, upward)


def test_batch_never_imports_cli():
    for path in (PACKAGE / "batch").rglob("*.py"):
        assert "cli" not in _imports(path), path


def test_no_module_reads_the_package_root():
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE and path.name == "__init__.py":
            continue
        assert all(name and _is_module(name) for name in _imports(path)), (path, _imports(path))


def test_expand_paths_lists_files_and_names_each_problem(tmp_path):
    """The files ``audit`` would read, without Blender: a folder's supported files sorted, and a
    problem for a missing path, an empty folder and an unsupported type."""
    from skin_audit.core.input_guard import expand_paths

    (tmp_path / "rigs" / "sub").mkdir(parents=True)
    for name in ("rigs/b.glb", "rigs/sub/a.BLEND", "rigs/notes.txt"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "empty").mkdir()
    (tmp_path / "x.obj").write_bytes(b"")
    got = expand_paths([str(tmp_path / "rigs"), str(tmp_path / "missing.blend"), str(tmp_path / "empty"),
                        str(tmp_path / "x.obj")])
    assert got[:2] == [(tmp_path / "rigs" / "b.glb", ""), (tmp_path / "rigs" / "sub" / "a.BLEND", "")]
    assert got[2] == (tmp_path / "missing.blend", "no such file or folder")
    assert got[3][0] == tmp_path / "empty" and got[3][1].startswith("folder has no .blend")
    assert got[4][0] == tmp_path / "x.obj" and "unsupported file type '.obj'" in got[4][1]

