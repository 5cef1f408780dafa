# SPDX-License-Identifier: GPL-3.0-or-later
"""A non-finite result is a finding, never a pass, and never a NaN in the JSON.

Comparisons with NaN are false, so a recomputation that produced NaN (a bone
scaled to zero under Preserve Volume, a NaN vertex) would slip past every
``diff > tol`` test and print "nan" beside a pass.  :func:`finite_audit` runs
over a finished mesh or rig audit: every non-finite metric and finding detail
becomes ``None`` (``null`` in the strict JSON) and one ERROR
``non-finite-result`` names what could not be computed and where.  numpy only.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from ..findings import Finding

#: The code this module reports (part of mesh_audit.RULE_CODES).
NON_FINITE_RESULT = "non-finite-result"

T = TypeVar("T")


def _finite_value(value: Any, path: str, bad: list[str]) -> Any:
    """``value`` with every non-finite float replaced by None; the paths replaced go to ``bad``."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float | np.floating):
        if math.isfinite(float(value)):
            return value
        bad.append(path)
        return None
    if isinstance(value, dict):
        return {k: _finite_value(v, f"{path}.{k}", bad) for k, v in value.items()}
    if isinstance(value, list | tuple):
        out = [_finite_value(v, f"{path}[{i}]", bad) for i, v in enumerate(value)]
        return tuple(out) if isinstance(value, tuple) else out
    if isinstance(value, np.ndarray):
        return _finite_value(value.tolist(), path, bad)
    return value


def finite_audit(audit: T) -> T:
    """A MeshAudit or RigAudit whose metrics and finding details are finite or None, with an
    ERROR ``non-finite-result`` when anything was not (its vertices from the per-vertex measures)."""
    bad: list[str] = []
    metrics = _finite_value(dict(getattr(audit, "metrics", {})), "", bad)
    findings = []
    for f in getattr(audit, "findings", ()):
        if f.details:
            local: list[str] = []
            details = _finite_value(dict(f.details), f"{f.code} details", local)
            if local:
                bad += local
                f = replace(f, details=details)
        findings.append(f)
    measures = getattr(audit, "measures", {}) or {}
    vertex_mask = None
    for name, values in measures.items():
        arr = np.asarray(values)
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            mask = ~np.isfinite(arr).reshape(len(arr), -1).all(axis=1)
            vertex_mask = mask if vertex_mask is None else vertex_mask | mask
            bad.append(f"per-vertex {name}")
    if not bad:
        return audit
    if any(f.code == NON_FINITE_RESULT for f in findings):  # already judged: just keep the JSON strict
        return replace(audit, metrics=metrics, findings=tuple(findings))  # type: ignore[type-var]
    names = sorted({p.lstrip(".").split("[")[0] for p in bad})
    verts: tuple[int, ...] = tuple(np.flatnonzero(vertex_mask).tolist()) if vertex_mask is not None else ()
    where = f" on {len(verts)} vertices (first: {', '.join(map(str, verts[:3]))})" if verts else ""
    owner = getattr(audit, "object", "") or getattr(audit, "armature", "")
    findings.append(Finding(
        NON_FINITE_RESULT, "ERROR",
        f"the audit of '{owner}' computed NaN or infinity for {', '.join(names[:6])}"
        f"{' ...' if len(names) > 6 else ''}{where}: these numbers are reported as null, not as a pass. "
        "Look for a bone or object scaled to zero, NaN vertex positions or weights, or a degenerate pose",
        len(verts) if verts else len(names), verts, (), (), {"undefined": names}))
    return replace(audit, metrics=metrics, findings=tuple(findings))  # type: ignore[type-var]


def finite_file_audit(file_audit: T) -> T:
    """:func:`finite_audit` over every mesh and rig entry of a FileAudit."""
    changes = {name: tuple(finite_audit(a) for a in getattr(file_audit, name))
               for name in ("meshes", "rigs") if hasattr(file_audit, name)}
    return replace(file_audit, **changes)  # type: ignore[type-var]
