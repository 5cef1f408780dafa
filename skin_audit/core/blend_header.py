# SPDX-License-Identifier: GPL-3.0-or-later
"""Which Blender saved a .blend file, read from the file's header (standard library only).

A .blend file starts with a header naming the version of Blender that wrote it, which is what
an older Blender needs to be told when it refuses the file ("not a blend file"):

- the 12-byte header of every Blender up to 4.x: ``BLENDER``, the pointer size (``_`` 4 bytes,
  ``-`` 8 bytes), the byte order (``v`` little, ``V`` big endian) and three digits of the file
  version (``BLENDER-v402``: Blender 4.2);
- the 17-byte header Blender 5.0 introduced: ``BLENDER``, the header's size in two digits
  (``17``), ``-``, the file format version in two digits (``01``), ``v`` and four digits of the
  file version (``BLENDER17-01v0500``: Blender 5.0).

The file version is ``100 * major + minor`` (Blender's ``BLENDER_FILE_VERSION``).  A file saved
with compression is a zstd stream (Blender 3.0 and newer) or a gzip stream (older Blenders)
whose decompressed bytes start with that header.  gzip is read with the standard library.
zstd is in the standard library only from Python 3.14 (``compression.zstd``), newer than any
Blender's Python, so without it the header is read only where the frame's first block stores
its first bytes as they are: a raw block, or a compressed block whose literals are raw.  Blender
4.2 and 5.0 write that (the header opens a small first frame); Blender 5.2 Huffman-codes the
first literals, which takes a zstd decoder: the caller may pass one (``zstd_decompress``: the
``zstandard`` module Blender ships).  Without one such a file reads as an unknown version (None).
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass

#: The zstd frame magic number (little-endian 0xFD2FB528) and gzip's.
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
#: Enough bytes of a file for every header layout read here (frame header, block header,
#: literals header and the 17-byte Blender header).
_PREFIX = 64
#: What a zstd decoder is given: the first block of a frame is at most 128 KiB.
_ZSTD_PREFIX = 256 * 1024

#: A function decompressing the start of a zstd stream (as much as the bytes given allow).
ZstdDecompress = Callable[[bytes], bytes]

_LEGACY = re.compile(rb"BLENDER([_-])([vV])(\d{3})")
_LARGE = re.compile(rb"BLENDER17-(\d{2})v(\d{4})")


@dataclass(frozen=True)
class BlendHeader:
    """What a .blend file's header says.

    ``file_version`` is Blender's ``100 * major + minor`` (502 for Blender 5.2);
    ``compression`` is ``"zstd"``, ``"gzip"`` or ``None``."""

    file_version: int
    format_version: int
    pointer_size: int
    little_endian: bool
    compression: str | None

    @property
    def blender_version(self) -> tuple[int, int]:
        """The (major, minor) version of the Blender that saved the file."""
        return divmod(self.file_version, 100)

    @property
    def blender_version_text(self) -> str:
        major, minor = self.blender_version
        return f"{major}.{minor}"


def decode_header(data: bytes, compression: str | None = None) -> BlendHeader | None:
    """The header at the start of ``data`` (uncompressed .blend bytes), or None if it is none
    this module knows (not a .blend file, or a layout newer than the 17-byte header)."""
    legacy = _LEGACY.match(data)
    if legacy is not None:
        return BlendHeader(file_version=int(legacy.group(3)), format_version=0,
                           pointer_size=4 if legacy.group(1) == b"_" else 8,
                           little_endian=legacy.group(2) == b"v", compression=compression)
    large = _LARGE.match(data)
    if large is not None:
        return BlendHeader(file_version=int(large.group(2)), format_version=int(large.group(1)),
                           pointer_size=8, little_endian=True, compression=compression)
    return None


def _zstd_first_bytes(data: bytes) -> bytes:
    """The first decompressed bytes of a zstd frame when its first block stores them as they are
    (a raw block, or a compressed block with raw literals); empty otherwise.

    Layout from RFC 8878 (Zstandard), sections 3.1.1 (frame header), 3.1.1.2 (blocks) and
    3.1.1.3.1 (literals section header)."""
    if len(data) < 6 or not data.startswith(ZSTD_MAGIC):
        return b""
    descriptor = data[4]
    if descriptor & 0x08:  # reserved bit: not a frame this reader knows
        return b""
    content_size_flag = descriptor >> 6
    single_segment = bool(descriptor & 0x20)
    dictionary_id_bytes = (0, 1, 2, 4)[descriptor & 0x03]
    content_size_bytes = (1 if single_segment else 0, 2, 4, 8)[content_size_flag]
    at = 5 + (0 if single_segment else 1) + dictionary_id_bytes + content_size_bytes
    if len(data) < at + 3:
        return b""
    block = int.from_bytes(data[at:at + 3], "little")
    block_type, block_size = (block >> 1) & 0x03, block >> 3
    at += 3
    if block_type == 0:  # raw block: the bytes themselves
        return data[at:at + block_size]
    if block_type != 2 or len(data) < at + 3:  # RLE (one byte repeated) or reserved
        return b""
    literals = data[at]
    if literals & 0x03 != 0:  # RLE, Huffman-coded or treeless literals: not readable here
        return b""
    size_format = (literals >> 2) & 0x03
    if size_format in (0, 2):  # 1-byte literals header, 5-bit size
        size, header_size = literals >> 3, 1
    elif size_format == 1:  # 2-byte header, 12-bit size
        size, header_size = (literals >> 4) + (data[at + 1] << 4), 2
    else:  # 3-byte header, 20-bit size
        size, header_size = (literals >> 4) + (data[at + 1] << 4) + (data[at + 2] << 12), 3
    # Literals come first in the output only up to the first sequence's match; no 3 bytes of a
    # Blender header repeat earlier in it, so the header's bytes are all literals.
    return data[at + header_size:at + header_size + min(size, block_size)]


def _stdlib_zstd() -> ZstdDecompress | None:
    """Python 3.14's ``compression.zstd`` as a decompressor of a stream's start, where it exists."""
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        return None

    def decompress(data: bytes) -> bytes:
        return bytes(zstd.ZstdDecompressor().decompress(data))

    return decompress


def read_blend_header(path: str | os.PathLike[str], zstd_decompress: ZstdDecompress | None = None
                      ) -> BlendHeader | None:
    """The header of the .blend file at ``path``, or None when it cannot be told (not a .blend
    file, a header layout unknown here, a zstd layout no decoder at hand reads, or a file that
    cannot be read).  ``zstd_decompress`` decodes what the standard library cannot."""
    try:
        with open(path, "rb") as f:
            start = f.read(_PREFIX)
            if start.startswith(ZSTD_MAGIC):
                header = decode_header(_zstd_first_bytes(start), "zstd")
                decompress = zstd_decompress or _stdlib_zstd()
                if header is None and decompress is not None:
                    try:
                        header = decode_header(decompress(start + f.read(_ZSTD_PREFIX - _PREFIX)), "zstd")
                    except Exception:  # a decoder's own error on a corrupt stream: the version is unknown
                        header = None
                return header
    except OSError:
        return None
    if start.startswith(GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as g:
                return decode_header(g.read(_PREFIX), "gzip")
        except (OSError, EOFError, zlib.error):
            return None
    return decode_header(start)


def newer_blender_message(path: str | os.PathLike[str], running: tuple[int, ...],
                          zstd_decompress: ZstdDecompress | None = None) -> str | None:
    """Why Blender ``running`` (its ``bpy.app.version``) cannot open ``path`` if the header says
    a newer Blender saved it: ``"saved by Blender 5.0, newer than this Blender 3.4"`` and what
    to do; None when the file is not newer (or its version cannot be read)."""
    header = read_blend_header(path, zstd_decompress)
    if header is None or header.blender_version <= tuple(running[:2]):
        return None
    saved = header.blender_version_text
    return (f"saved by Blender {saved}, newer than this Blender {running[0]}.{running[1]}: "
            f"open it with Blender {saved} or newer")
