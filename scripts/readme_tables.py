# SPDX-License-Identifier: GPL-3.0-or-later
"""Print the asset audit table of docs/real-rigs.md from a real audit of the rigs in tests/assets.

    .venv/bin/python scripts/readme_tables.py [--assets tests/assets] [--out FILE]

One row per audited mesh: file (relative to the assets folder), mesh,
vertices, numpy vs Blender, engine divergence, sigma min (2 significant
digits) and the codes of its WARNING and ERROR findings (the mesh's own and
those of the armature that deforms it).  tests/audit/test_readme_tables.py
checks that docs/real-rigs.md holds this table, so paste the output there when the
audit's numbers change.  Needs the ``bpy`` module (the project's .venv).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADER = ("file", "mesh", "vertices", "numpy vs Blender", "engine divergence", "sigma min", "warnings and errors")


@dataclass(frozen=True)
class AssetRow:
    file: str
    mesh: str
    vertices: int
    numpy_vs_blender: float | None
    engine_divergence: float | None
    sigma_min: float | None
    findings: tuple[str, ...]  # sorted codes at WARNING or ERROR

    def cells(self) -> tuple[str, ...]:
        return (self.file, self.mesh, str(self.vertices), number(self.numpy_vs_blender),
                number(self.engine_divergence), number(self.sigma_min), ", ".join(self.findings) or "none")


def number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2g}"


def asset_rows(assets: Path) -> list[AssetRow]:
    """Audit every file under ``assets`` with the default options (the README's command) and tabulate it."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import bpy

    from skin_audit.blender.run.audit_files import audit_paths
    from skin_audit.core.audit.options import AuditOptions

    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        files = audit_paths([str(assets)], AuditOptions())
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    rows = []
    for fa in files:
        file = Path(fa.path).resolve().relative_to(assets.resolve()).as_posix()
        if fa.status != "ok":  # shown, so a README row of a file that no longer audits cannot match
            print(f"{fa.path}: not audited: {fa.message}", file=sys.stderr)
            rows.append(AssetRow(file, "(not audited)", 0, None, None, None, ("file-error",)))
            continue
        rigs = getattr(fa, "rigs", ())  # the armature's own findings, when reported once per rig
        for m in fa.meshes:
            shared = [f for r in rigs if m.object in getattr(r, "meshes", ()) for f in r.findings]
            codes = sorted({f.code for f in (*m.findings, *shared) if f.severity in ("WARNING", "ERROR")})
            k = m.metrics
            rows.append(AssetRow(file, m.object, m.vertices, k.get("max_numpy_vs_blender"),
                                 k.get("max_engine_divergence"), k.get("min_singular_value"), tuple(codes)))
    return sorted(rows, key=lambda r: (r.file, r.mesh))


def markdown_table(rows: list[AssetRow]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "| " + " | ".join("---" for _ in HEADER) + " |"]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=REPO / "tests" / "assets", help="folder of rigs")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    table = markdown_table(asset_rows(args.assets))
    sys.stdout.write(table)
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    import os

    os._exit(code)  # bpy 4.2 can crash in its own shutdown after a glTF import
