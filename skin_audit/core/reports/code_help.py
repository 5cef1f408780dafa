# SPDX-License-Identifier: GPL-3.0-or-later
"""What each finding code means and what to do about it, for the report files: the entries of
core/codes.py (one table for every code), read here by the JUnit, SARIF and HTML writers."""

from __future__ import annotations

from ..codes import CODES, DOC_PATH, Code

#: The documentation of one finding code.
CodeHelp = Code
#: code -> its help, in the order of the docs table.
CODE_HELP: dict[str, CodeHelp] = CODES
__all__ = ["CODE_HELP", "DOC_PATH", "CodeHelp", "code_anchor", "help_for"]


def code_anchor(code: str) -> str:
    """The HTML anchor of a code's row in docs/report-format.md (the code itself)."""
    return code


def help_for(code: str) -> CodeHelp:
    """The help of ``code``; an unknown code (a newer audit) gets a neutral entry, not an error."""
    found = CODE_HELP.get(code)
    if found is not None:
        return found
    return CodeHelp(code, "WARNING", "mesh", code, f"See {DOC_PATH} for '{code}'.", "")
