# SPDX-License-Identifier: GPL-3.0-or-later
"""Walk a binary FBX file's record structure before Blender's importer sees it.

Blender's FBX importer trusts the counts in the file: a 3 KB file with a valid
header and a random body makes it allocate ``[None] * numProperties`` (billions)
and loop over it, measured at 10 to 70 s and up to 14.5 GB before it fails.
This walk reads only record headers and property headers (arrays and strings are
skipped by length, nothing is inflated), checks that every length and offset
fits inside its parent and the file, and that every count is possible for the
bytes it claims.  A file that passes has a sound structure; the importer still
judges its content.  Standard library only.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

MAGIC = b"Kaydara FBX Binary  \x00\x1a\x00"
HEADER_SIZE = len(MAGIC) + 4
#: Versions Blender's importer reads (7.1 to 7.7; 7.5 moved record headers to 64 bits).
MIN_VERSION, MAX_VERSION = 7100, 7700
#: zlib cannot inflate more than about 1032:1; an array claiming more is corrupt.
MAX_INFLATE_RATIO = 1100
#: Nesting deeper than this is not a scene graph.
MAX_DEPTH = 64

_SCALAR_SIZES = {ord("Y"): 2, ord("C"): 1, ord("I"): 4, ord("F"): 4, ord("D"): 8, ord("L"): 8}
_ARRAY_SIZES = {ord("f"): 4, ord("d"): 8, ord("l"): 8, ord("i"): 4, ord("b"): 1}
_BLOB_TYPES = {ord("S"), ord("R")}


def _properties(buf: mmap.mmap | bytes, at: int, end: int, count: int) -> str:
    """Walk ``count`` properties from ``at``; they must end exactly at ``end``. '' when sound."""
    for k in range(count):
        if at >= end:
            return f"property {k} of {count} starts past its list"
        kind = buf[at]
        at += 1
        if kind in _SCALAR_SIZES:
            at += _SCALAR_SIZES[kind]
        elif kind in _ARRAY_SIZES:
            if at + 12 > end:
                return "an array property header runs past its list"
            length, encoding, stored = struct.unpack_from("<III", buf, at)
            at += 12
            raw = length * _ARRAY_SIZES[kind]
            if encoding == 0 and stored != raw:
                return f"an array of {length} values claims {stored} bytes, not {raw}"
            if encoding == 1 and raw > MAX_INFLATE_RATIO * stored + 64:
                return f"a compressed array claims {length} values from {stored} bytes"
            if encoding not in (0, 1):
                return f"an array has unknown encoding {encoding}"
            at += stored
        elif kind in _BLOB_TYPES:
            if at + 4 > end:
                return "a string property header runs past its list"
            (length,) = struct.unpack_from("<I", buf, at)
            at += 4 + length
        else:
            return f"unknown property type byte 0x{kind:02x}"
        if at > end:
            return "a property runs past its list"
    return "" if at == end else f"properties end at {at}, their list at {end}"


def fbx_structure_problem(path: str | os.PathLike[str]) -> str:
    """'' when ``path`` is an ASCII FBX (left to the importer) or a sound binary FBX;
    otherwise what is wrong, in a few words, with the byte offset."""
    p = Path(path)
    size = p.stat().st_size
    with p.open("rb") as f:
        head = f.read(HEADER_SIZE)
        if not head.startswith(b"Kaydara FBX Binary"):
            return ""  # ASCII FBX or not FBX at all: the importer says which, quickly
        if len(head) < HEADER_SIZE or head[: len(MAGIC)] != MAGIC:
            return "binary FBX header is damaged"
        (version,) = struct.unpack_from("<I", head, len(MAGIC))
        if not MIN_VERSION <= version <= MAX_VERSION:
            return f"binary FBX version {version} is not one Blender reads ({MIN_VERSION} to {MAX_VERSION})"
        if size < HEADER_SIZE + 13:
            return "binary FBX file ends right after its header"
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _records(buf, size, version)


def _records(buf: mmap.mmap, size: int, version: int) -> str:
    wide = version >= 7500
    head_fmt, head_size = ("<QQQB", 25) if wide else ("<IIIB", 13)
    # (start of the next record, end of the list it belongs to, depth)
    stack = [(HEADER_SIZE, size, 0)]
    while stack:
        at, list_end, depth = stack.pop()
        if at == list_end:
            continue  # a list that fills its parent exactly, without a null record
        if at + head_size > list_end:
            if depth == 0:
                return ""  # top-level list may end without its null record before the footer
            return f"record header at byte {at} runs past its parent"
        end, count, plen, nlen = struct.unpack_from(head_fmt, buf, at)
        if end == 0:
            continue  # the null record closing a list
        props = at + head_size + nlen
        if not at < end <= list_end:
            return f"record at byte {at} claims to end at byte {end}, outside its parent (ends {list_end})"
        if props + plen > end:
            return f"record at byte {at}: its {plen} bytes of properties run past its end"
        if 2 * count > plen:
            return f"record at byte {at} claims {count} properties in {plen} bytes"
        problem = _properties(buf, props, props + plen, count)
        if problem:
            return f"record at byte {at}: {problem}"
        if depth >= MAX_DEPTH:
            return f"records nested more than {MAX_DEPTH} deep at byte {at}"
        stack.append((end, list_end, depth))  # the next sibling
        if props + plen < end:
            stack.append((props + plen, end, depth + 1))  # the children first
    return ""
