# SPDX-License-Identifier: GPL-3.0-or-later
"""The human summary of an audit report (stdout of ``skin_audit audit``)."""

from __future__ import annotations

from ..findings import SEVERITY_RANK
from ..text import printable
from .report import AuditReport


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return "n/a" if value is None else str(value)


def audit_summary_text(report: AuditReport, fail_on: str) -> str:
    lines = []
    for fa in report.files:
        if fa.status != "ok":
            lines.append(f"{fa.path}: ERROR: {fa.message}")
            continue
        lines.append(f"{fa.path}: {len(fa.meshes)} skinned mesh(es)")
        for m in fa.meshes:
            k = m.metrics
            lines.append(
                f"  {m.object} <- {m.armature}: {m.vertices} vertices; numpy vs Blender "
                f"{_fmt(k.get('max_numpy_vs_blender'))}, bind drift {_fmt(k.get('max_bind_drift'))}, "
                f"engine divergence {_fmt(k.get('max_engine_divergence'))}, "
                f"max influences {_fmt(k.get('max_influences'))}"
            )
            for f in sorted(m.findings, key=lambda f: -SEVERITY_RANK[f.severity]):
                lines.append(f"    [{f.severity}] {f.code}: {f.message}")
    data = report.to_dict()["summary"]
    lines.append(
        f"{data['files']} file(s), {data['files_with_errors']} unreadable, {data['meshes']} mesh(es); "
        f"worst finding: {data['worst_severity'] or 'none'} (failing on: {fail_on})"
    )
    return "".join(printable(line) + "\n" for line in lines)  # a name's ESC or newline shown, never obeyed
