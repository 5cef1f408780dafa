# SPDX-License-Identifier: GPL-3.0-or-later
"""The codes the audit can emit, read from the code that emits them.

Every call that makes a finding in ``skin_audit/core/audit`` (``Finding(...)``,
``_finding(...)``, ``_squash_finding(...)`` or any ``code=`` keyword) is found
in the syntax tree, and its code read from a string literal, a module constant,
or the literal tuples a ``for`` loop unpacks into the name.  That set must equal
the declared lists (``RULE_CODES``, ``SHAPE_CODES``) and the documented table
(docs/report-format.md).  That every code fires is shown by running its rule
(tests/core/audit/test_codes_fire.py).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from skin_audit.core.audit.mesh_audit import RULE_CODES
from skin_audit.core.audit.shape_checks import SHAPE_CODES
from skin_audit.core.codes import FAMILIES
from skin_audit.core.engines.gltf_audit import GLTF_CODES

REPO = Path(__file__).resolve().parents[3]
AUDIT = REPO / "skin_audit" / "core" / "audit"
DOC = REPO / "docs" / "report-format.md"
#: Callables whose first argument (or ``code=``) is a finding code.
MAKERS = {"Finding", "_finding", "_squash_finding", "_squash"}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _module_strings(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _loop_values(name: str, node: ast.AST, parents: dict[ast.AST, ast.AST]) -> set[str] | None:
    """Codes a ``for`` loop around ``node`` binds to ``name`` from literal tuples, or None."""
    while node in parents:
        node = parents[node]
        if not isinstance(node, ast.For) or not isinstance(node.iter, (ast.Tuple, ast.List)):
            continue
        target = node.target
        if isinstance(target, ast.Name) and target.id == name:
            values = [e.value for e in node.iter.elts if isinstance(e, ast.Constant)]
        elif isinstance(target, ast.Tuple) and any(isinstance(t, ast.Name) and t.id == name for t in target.elts):
            k = next(i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == name)
            values = [e.elts[k].value for e in node.iter.elts
                      if isinstance(e, ast.Tuple) and isinstance(e.elts[k], ast.Constant)]
        else:
            continue
        if len(values) != len(node.iter.elts) or not all(isinstance(v, str) for v in values):
            return None
        return set(values)
    return None


@functools.cache
def emitted_codes() -> tuple[dict[str, set[str]], list[str]]:
    """({code: {file:line, ...}}, [call sites whose code could not be read]); read once per run
    (the sources do not change under the tests; the callers only read the result)."""
    codes: dict[str, set[str]] = {}
    unreadable: list[str] = []
    # engine-divergence is made by core/engines/divergence.py (it names the engine target); the
    # skeleton codes by core/skeleton (the rig audit calls it).
    skeleton = sorted((REPO / "skin_audit" / "core" / "skeleton").glob("*.py"))
    for path in [*sorted(AUDIT.glob("*.py")), REPO / "skin_audit" / "core" / "engines" / "divergence.py", *skeleton]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = _parents(tree)
        constants = _module_strings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            arg = next((k.value for k in node.keywords if k.arg == "code"), None)
            if arg is None and callee in MAKERS and node.args:
                arg = node.args[0]
            if arg is None:
                continue
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found = {arg.value}
            elif isinstance(arg, ast.Name) and arg.id in constants:
                found = {constants[arg.id]}
            elif isinstance(arg, ast.Name) and _loop_values(arg.id, node, parents) is not None:
                found = _loop_values(arg.id, node, parents) or set()
            elif isinstance(arg, ast.Name) and callee in MAKERS and _is_parameter(arg.id, node, parents):
                continue  # a helper passing its own ``code`` parameter on: its callers are read instead
            else:
                unreadable.append(f"{where}: {ast.unparse(arg)}")
                continue
            for code in found:
                codes.setdefault(code, set()).add(where)
    return codes, unreadable


def _is_parameter(name: str, node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return name in {a.arg for a in node.args.args + node.args.kwonlyargs}
    return False


def documented_codes() -> set[str]:
    table = DOC.read_text(encoding="utf-8").split("## Finding codes", 1)[1]
    out: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            out |= set(re.findall(r"`([a-z0-9-]+)`", line.split("|")[1]))
    return out


def test_every_call_site_names_its_code_readably():
    codes, unreadable = emitted_codes()
    assert unreadable == [], "finding codes built at run time cannot be checked against the docs"
    assert len(codes) >= 30, sorted(codes)  # the reader sees the audit's call sites at all


def test_emitted_codes_are_the_declared_and_the_documented_ones():
    emitted = set(emitted_codes()[0])
    declared = set(RULE_CODES | SHAPE_CODES)
    assert sorted(declared - emitted) == [], "declared but never emitted"
    assert sorted(emitted - declared) == [], "emitted but not declared in RULE_CODES / SHAPE_CODES"
    assert sorted(emitted - documented_codes()) == [], "emitted but not in docs/report-format.md"
    # glTF input codes are emitted outside core/audit (core/gltf/checks.py, core/engines/gltf_audit.py).
    assert sorted(documented_codes() - emitted - GLTF_CODES) == [], "documented but never emitted"


def test_gltf_codes_are_the_ones_the_gltf_modules_emit():
    sources = "".join((REPO / "skin_audit" / "core" / p).read_text(encoding="utf-8")
                      for p in ("gltf/checks.py", "engines/gltf_audit.py", "engines/babylon.py"))
    # babylon-* codes: the babylon target's own findings about the file (--target babylon).
    literals = set(re.findall(r'"((?:gltf|babylon)-[a-z0-9-]+)"', sources)) - set(FAMILIES)  # (family names)
    assert literals == set(GLTF_CODES)


#: The modules the shape checks run (shape_checks.py calls surface.py, surface_verdicts.py and
#: weight_smoothness.py).
SHAPE_MODULES = ("shape_checks.py", "rig_audit.py", "surface.py", "surface_verdicts.py", "weight_smoothness.py")


def test_shape_codes_are_emitted_by_the_shape_checks():
    codes, _ = emitted_codes()
    # (interpenetration.py and joints.py: the rig's contact and joint checks, run from rig_audit.py)
    homes = (*SHAPE_MODULES, "interpenetration.py", "joints.py")
    outside = {c for c in SHAPE_CODES if not any(h in w for h in homes for w in codes[c])}
    assert outside == set()
