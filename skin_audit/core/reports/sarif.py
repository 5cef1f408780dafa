# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit report as SARIF 2.1.0 (GitHub code scanning, GitLab, SARIF viewers).

- one run; ``tool.driver.rules`` holds one rule per finding code of the
  report (id = the code, help text from ``code_help``, ``helpUri`` =
  ``help_base_uri#code`` when a base is given: SARIF wants an absolute URI and
  the project has no published home yet, so the caller passes it);
- one result per finding: level error/warning/note from ERROR/WARNING/INFO;
  the file as ``artifactLocation``; the mesh object (or for a rig finding
  the armature), its armature and the bones named in ``logicalLocations``; vertices, bones and groups in the
  message and in ``properties``;
- a finding the config file ignored stays in the log as a suppressed result
  (``suppressions``), so nothing is silently hidden;
- a file that could not be audited is a ``toolExecutionNotifications`` entry
  and makes ``executionSuccessful`` false.

Valid against the OASIS SARIF 2.1.0 schema (tests/schemas/).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from .code_help import CODE_HELP, code_anchor, help_for
from .units import Unit, all_findings, units

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"ERROR": "error", "WARNING": "warning", "INFO": "note"}
#: How many vertex indices and bones a result's message names (all are in ``properties``).
SHOWN = 10


def artifact_uri(path: str) -> str:
    """A file path as a SARIF artifact URI: relative paths stay relative (to the
    checkout, as code scanning wants), absolute ones become file:// URIs."""
    if PureWindowsPath(path).drive:
        return PureWindowsPath(path).as_uri()
    posix = path.replace("\\", "/")
    if posix.startswith("/"):
        return PurePosixPath(posix).as_uri()
    return quote(posix, safe="/-._~")


def _level(severity: object) -> str:
    return LEVELS.get(str(severity).upper(), "warning")


def _rule(code: str, help_base_uri: str | None) -> dict[str, Any]:
    h = help_for(code)
    rule: dict[str, Any] = {
        "id": code,
        "name": "".join(part.capitalize() for part in code.split("-")),
        "shortDescription": {"text": h.title},
        "fullDescription": {"text": h.rule},
        "help": {"text": f"{h.rule} {h.action}".strip(),
                 "markdown": f"{h.rule}\n\n**What to do:** {h.action}" if h.action else h.rule},
        "defaultConfiguration": {"level": _level(h.default_level)},
        "properties": {"severity": h.severity, "known": code in CODE_HELP},
    }
    if help_base_uri:
        rule["helpUri"] = f"{help_base_uri}#{code_anchor(code)}"
    return rule


def _list(items: list[Any], total: int) -> str:
    shown = ", ".join(str(i) for i in items[:SHOWN])
    return shown + (f" and {total - min(len(items), SHOWN)} more" if total > min(len(items), SHOWN) else "")


def _message(unit: Unit, f: Mapping[str, Any]) -> str:
    where = f"{unit.armature} (rig)" if unit.kind == "rig" else f"{unit.object} (armature {unit.armature})"
    text = f"{where}: {f.get('message', '')}"
    vertices = list(f.get("vertices", ()))
    total = int(f.get("vertices_total", len(vertices)))
    extra = []
    if total:
        extra.append(f"vertices {_list(vertices, total)}")
    for key in ("bones", "groups"):
        if f.get(key):
            extra.append(f"{key} {_list(list(f[key]), len(f[key]))}")
    return text + (" [" + "; ".join(extra) + "]" if extra else "")


def _logical(unit: Unit, f: Mapping[str, Any]) -> list[dict[str, Any]]:
    obj, arm = unit.object, unit.armature
    out: list[dict[str, Any]] = [{"name": obj, "fullyQualifiedName": obj, "kind": "object"}]
    if arm and arm != obj:
        out.append({"name": arm, "fullyQualifiedName": arm, "kind": "object"})
    for bone in list(f.get("bones", ()))[:SHOWN]:
        out.append({"name": str(bone), "fullyQualifiedName": f"{arm}/{bone}", "kind": "member"})
    for group in list(f.get("groups", ()))[:SHOWN]:
        out.append({"name": str(group), "fullyQualifiedName": f"{obj}/{group}", "kind": "variable"})
    return out


def _result(path: str, unit: Unit, f: Mapping[str, Any], rules: dict[str, int],
            suppressed_by: str = "") -> dict[str, Any]:
    code = str(f.get("code"))
    identity = "\x1f".join([path, unit.kind, unit.object, code, str(f.get("message", ""))])
    result: dict[str, Any] = {
        "ruleId": code,
        "ruleIndex": rules[code],
        "level": _level(f.get("severity")),
        "message": {"text": _message(unit, f)},
        "locations": [{
            # An asset has no lines, but GitHub code scanning shows only results with a
            # region.startLine (sarif-sdk rule GH1003): the file's start stands for the file.
            "physicalLocation": {"artifactLocation": {"uri": artifact_uri(path)}, "region": {"startLine": 1}},
            "logicalLocations": _logical(unit, f),
        }],
        # Stable across runs so code scanning follows one finding from run to run.
        "partialFingerprints": {"skinAuditFinding/v1": hashlib.sha256(identity.encode()).hexdigest()[:32]},
        "properties": {k: f[k] for k in ("count", "vertices", "vertices_total", "bones", "groups", "details")
                       if k in f},
    }
    if suppressed_by:
        result["suppressions"] = [{"kind": "external", "justification": suppressed_by}]
    return result


def sarif_log(report: Mapping[str, Any], help_base_uri: str | None = None) -> dict[str, Any]:
    """The report as a SARIF 2.1.0 log (a JSON-ready dict).

    Parameters
    ----------
    report : dict
        The JSON-shaped report (docs/report-format.md); an optional
        ``config.changes`` list (``ConfigChange.to_dict()``) adds the
        findings the config ignored as suppressed results.
    help_base_uri : str, optional
        Absolute URI of docs/report-format.md; each rule's ``helpUri`` is it
        plus ``#<code>``.
    """
    ignored = [c for c in report.get("config", {}).get("changes", ()) if c.get("action") == "ignore"]
    codes = [str(f.get("code")) for f in all_findings(report)] + [str(c.get("code")) for c in ignored]
    ordered = sorted(set(codes), key=lambda c: (list(CODE_HELP).index(c) if c in CODE_HELP else len(CODE_HELP), c))
    rules = {code: i for i, code in enumerate(ordered)}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for file in report.get("files", ()):
        path = str(file.get("path", ""))
        if file.get("status", "ok") != "ok":
            notifications.append({
                "level": "error",
                "message": {"text": f"{path}: {file.get('message', 'could not be audited')}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(path)}}}],
                "descriptor": {"id": "file-error"},
            })
        for unit in units(file):
            results += [_result(path, unit, f, rules) for f in unit.findings]
    source = report.get("config", {}).get("path", "the config file")
    for change in ignored:
        obj, arm = str(change.get("object", "")), str(change.get("armature", ""))
        unit = Unit("rig" if obj and obj == arm else "mesh", obj, arm, {}, ())
        finding = dict(change.get("finding") or {"code": change.get("code"), "severity": change.get("before"),
                                                 "message": change.get("reason", "")})
        results.append(_result(str(change.get("path", "")), unit, finding, rules, f"ignored by {source}"))
    tool = report.get("tool", {})
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "skin_audit",
            "version": str(tool.get("version", report.get("version", ""))),
            "rules": [_rule(code, help_base_uri) for code in ordered],
        }},
        "invocations": [{
            "executionSuccessful": not notifications,
            "toolExecutionNotifications": notifications,
        }],
        "results": results,
        "properties": {
            "blender_version": report.get("blender_version", ""),
            "options": report.get("options", {}),
            "summary": report.get("summary", {}),
            "config": report.get("config", {}),
        },
    }
    if help_base_uri:
        run["tool"]["driver"]["informationUri"] = help_base_uri
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def plain_json(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python numbers and lists, and
    non-finite floats as strings ('inf', 'nan'): strict JSON has neither."""
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return plain_json(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def sarif_json(report: Mapping[str, Any], help_base_uri: str | None = None) -> str:
    """``sarif_log`` as indented JSON text (what ``--sarif FILE`` writes)."""
    log = plain_json(sarif_log(report, help_base_uri))
    return json.dumps(log, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
