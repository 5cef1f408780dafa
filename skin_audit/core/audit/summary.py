# SPDX-License-Identifier: GPL-3.0-or-later
"""The human summary of an audit report (stdout of ``skin_audit audit``).

Rendered from the JSON-shaped report by ``core/reports/text`` (like every other
report format, so the rigs' findings are never forgotten); every line goes
through its one printing helper, ``terminal_line``.
"""

from __future__ import annotations

from typing import Any

from ..reports.text import summary_text
from .report import AuditReport


def audit_summary_text(report: AuditReport, fail_on: str, **options: Any) -> str:
    """The terminal summary of ``report``; ``options`` as ``core.reports.text.summary_lines``
    (``min_severity``, ``quiet``, ``written``)."""
    return summary_text(report.to_dict(), fail_on, **options)
