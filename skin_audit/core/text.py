# SPDX-License-Identifier: GPL-3.0-or-later
"""Text from a file (object, bone and file names, importer messages) made safe to print.

A name is the file's author's text: an ESC sequence in a bone name can clear the
terminal or recolour it, a newline can forge a ``[ERROR]`` line in a CI log, a
right-to-left override can reorder what a reviewer reads. ``printable`` shows every
such character as a visible escape instead; everything else passes unchanged, so
ordinary names (any script, any language) print as they are. Standard library only.
"""

from __future__ import annotations

import unicodedata

#: Escapes people recognise, for the control characters that have one.
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

#: Format characters that reorder or hide text (bidirectional overrides and isolates).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by Python's surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") or ch in _BIDI


def printable(text: object) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\n``, ``\\u202e``).

    Escaped: C0 and C1 controls and DEL (ESC, newline, carriage return, tab, BEL...),
    lone surrogates (bytes that were not UTF-8: ``\\xff``), the line and paragraph
    separators and the bidirectional controls. Backslashes are kept as they are
    (Windows paths), so an escape cannot be told from the same characters typed in a name.
    """
    s = str(text)
    if s.isprintable() and not any(ch in _BIDI for ch in s):
        return s  # the common case: nothing to look at twice
    return "".join(_escape(ch) if _unsafe(ch) else ch for ch in s)


def printable_lines(text: str) -> str:
    """Each line of ``text`` made printable, the line breaks themselves kept (a report's own layout)."""
    return "\n".join(printable(line) for line in text.split("\n"))
