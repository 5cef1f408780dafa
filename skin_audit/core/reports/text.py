# SPDX-License-Identifier: GPL-3.0-or-later
"""The terminal summary of an audit (stdout of ``skin_audit audit``), from the JSON report dict.

Per file: its rigs, then its meshes (``units``), every finding at or above
``min_severity`` and one line of counts per code, so a CI log reader can skim
it; then the run's totals and where the report files went.

Every line written to a terminal goes through ``terminal_line`` (one line, its
control characters shown as escapes): object, bone and file names come from
the audited files, and a name holding a newline or an escape sequence must not
forge a line of its own or repaint the terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from ..findings import SEVERITY_RANK
from ..text import printable
from .units import Unit, units

SEVERITIES = ("ERROR", "WARNING", "INFO")
def terminal_line(text: object) -> str:
    """``text`` as one line for a terminal: every control character (newline, carriage return,
    escape, bidirectional override...) written as a visible escape (``core.text.printable``)."""
    return printable(text)


def write_lines(stream: TextIO, lines: Iterable[object]) -> None:
    """Write each item of ``lines`` as one terminal line (``terminal_line``), then flush."""
    stream.write("".join(terminal_line(line) + "\n" for line in lines))
    stream.flush()


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return "n/a" if value is None else str(value)


def _rank(severity: str) -> int:
    return SEVERITY_RANK.get(str(severity).upper(), 0)


def severity_counts(findings: Iterable[Mapping[str, Any]]) -> str:
    """'1 ERROR, 2 WARNING' (most severe first), or 'no findings'."""
    n = Counter(str(f.get("severity")) for f in findings)
    return ", ".join(f"{n[s]} {s}" for s in SEVERITIES if n[s]) or "no findings"


def code_counts(findings: Iterable[Mapping[str, Any]]) -> str:
    """'ERROR bind-pose-drift 2; WARNING stray-weights 1, weight-asymmetry 1' (most severe first)."""
    n = Counter((str(f.get("severity")), str(f.get("code"))) for f in findings)
    parts = []
    for sev in SEVERITIES:
        codes = sorted((code, k) for (s, code), k in n.items() if s == sev)
        if codes:
            parts.append(f"{sev} " + ", ".join(f"{code} {k}" for code, k in codes))
    return "; ".join(parts)


def _head(unit: Unit) -> str:
    k = unit.metrics
    if unit.kind == "rig":
        bones = f"{_fmt(k.get('bones'))} bones, {_fmt(k.get('deform_bones'))} deform" if "bones" in k else ""
        deforms = ", ".join(unit.meshes) or "no mesh"
        return f"  {unit.armature} (rig, deforms {deforms})" + (f": {bones}" if bones else "")
    return (f"  {unit.object} <- {unit.armature}: {_fmt(unit.vertices)} vertices; numpy vs Blender "
            f"{_fmt(k.get('max_numpy_vs_blender'))}, bind drift {_fmt(k.get('max_bind_drift'))}, "
            f"engine divergence {_fmt(k.get('max_engine_divergence'))}, "
            f"max influences {_fmt(k.get('max_influences'))}")


def summary_lines(report: Mapping[str, Any], fail_on: str, *, min_severity: str = "info", quiet: bool = False,
                  written: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The terminal summary, one string per line (not yet passed through ``terminal_line``).

    Parameters
    ----------
    report : the JSON-shaped report (docs/report-format.md).
    fail_on : 'error', 'warning' or 'never', named on the last line.
    min_severity : 'info', 'warning' or 'error': findings below it are counted, not listed.
    quiet : only files with a listed finding or that could not be audited, and no metric lines.
    written : (kind, path) of each report file written, e.g. ('JSON', 'audit.json').
    """
    floor = _rank(min_severity)
    lines: list[str] = []
    for fa in report.get("files", ()):
        path = str(fa.get("path", ""))
        if fa.get("status", "ok") != "ok":
            lines.append(f"{path}: ERROR: {fa.get('message', '')}")
            continue
        file_units = units(fa)
        found = [f for u in file_units for f in u.findings]
        shown = [f for f in found if _rank(f.get("severity", "INFO")) >= floor]
        if quiet and not shown:
            continue
        rigs = sum(u.kind == "rig" for u in file_units)
        lines.append(f"{path}: {rigs} rig(s), {len(file_units) - rigs} skinned mesh(es); {severity_counts(found)}")
        for unit in file_units:
            listed = sorted((f for f in unit.findings if _rank(f.get("severity", "INFO")) >= floor),
                            key=lambda f: -_rank(f.get("severity", "INFO")))
            if quiet and not listed:
                continue
            lines.append(_head(unit) if not quiet else f"  {unit.label}")
            if not quiet:
                lines += [f"    {line}" for line in skeleton_lines(unit)]
            lines += [f"    [{f.get('severity')}] {f.get('code')}: {f.get('message', '')}" for f in listed]
        if found:
            hidden = len(found) - len(shown)
            lines.append(f"  counts: {code_counts(found)}"
                         + (f" ({hidden} below --min-severity {min_severity} not listed)" if hidden else ""))
    lines += skeleton_group_lines(report.get("skeletons", ()))
    data = report.get("summary", {})
    every = [f for fa in report.get("files", ()) for u in units(fa) for f in u.findings]
    lines.append(
        f"{_fmt(data.get('files'))} file(s), {_fmt(data.get('files_with_errors'))} unreadable, "
        f"{_fmt(data.get('meshes'))} mesh(es), {_fmt(data.get('rigs', 0))} rig(s); findings: {severity_counts(every)}; "
        f"worst finding: {data.get('worst_severity') or 'none'} (failing on: {fail_on})")
    if written:
        lines.append("reports: " + ", ".join(f"{kind} {path}" for kind, path in written))
    return lines


def skeleton_lines(unit: Unit) -> list[str]:
    """A rig's humanoid map and rest pose in a line each (nothing for a rig that is no humanoid)."""
    humanoid = unit.skeleton.get("humanoid", {}) if unit.kind == "rig" else {}
    if not humanoid.get("humanoid"):
        return []
    bones = humanoid.get("bones", {})
    out = [f"humanoid: {len(bones)} humanoid bones mapped"
           + (f", missing {', '.join(humanoid.get('missing', ()))}" if humanoid.get("missing") else "")
           + "; " + ", ".join(f"{k} = {v}" for k, v in list(bones.items())[:6]) + (" ..." if len(bones) > 6 else "")]
    pose = unit.skeleton.get("rest_pose")
    if pose:
        arms = {k: v.get("below_horizontal") for k, v in pose.get("limbs", {}).items() if "below_horizontal" in v}
        kind = {"t": "T-pose", "a": "A-pose"}.get(pose.get("convention") or "", "neither T- nor A-pose")
        out.append(f"rest pose: {kind}; arms " + ", ".join(f"{k} {_fmt(v)} deg below horizontal"
                                                           for k, v in arms.items()))
    return out


def skeleton_group_lines(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """The run's skeleton groups: one line per skeleton, members and what differs from the first."""
    if not groups:
        return []
    out = [f"skeletons: {len(groups)} distinct among "
           f"{sum(len(g.get('members', ())) for g in groups)} rig(s)"]
    for g in groups:
        members = ", ".join(f"{m.get('path')} ({m.get('armature')})" for m in g.get("members", ()))
        note = ""
        if "summary" in g:
            note = f"; differs from skeleton 1: {g['summary']}"
        elif g.get("related_to_skeleton_1") is False:
            note = "; unrelated to skeleton 1"
        out.append(f"  skeleton {g.get('skeleton')} ({g.get('bones')} deform bones): {members}{note}")
    return out


def summary_text(report: Mapping[str, Any], fail_on: str, **options: Any) -> str:
    """``summary_lines`` as terminal text: each line through ``terminal_line``, newline-terminated."""
    return "".join(terminal_line(line) + "\n" for line in summary_lines(report, fail_on, **options))
