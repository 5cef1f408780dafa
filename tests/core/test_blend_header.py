# SPDX-License-Identifier: GPL-3.0-or-later
"""The .blend header reader on hand-written headers and frames (layouts from Blender's
``BLO_readfile_blender_header_decode`` and RFC 8878 for zstd); files Blender itself saved are
read in tests/blender/test_saved_blend_header.py."""

from __future__ import annotations

import gzip
import random

import pytest

from skin_audit.core.blend_header import (
    BlendHeader,
    decode_header,
    newer_blender_message,
    read_blend_header,
)

LARGE_50 = b"BLENDER17-01v0500REND\x00\x00\x00"
LEGACY_42 = b"BLENDER-v402REND\x00\x00\x00\x00"


@pytest.mark.parametrize(("data", "expected"), [
    (LEGACY_42, BlendHeader(402, 0, 8, True, None)),
    (b"BLENDER_V279REND", BlendHeader(279, 0, 4, False, None)),
    (b"BLENDER-v304", BlendHeader(304, 0, 8, True, None)),
    (LARGE_50, BlendHeader(500, 1, 8, True, None)),
    (b"BLENDER17-01v0502", BlendHeader(502, 1, 8, True, None)),
])
def test_headers_of_both_layouts(data, expected):
    assert decode_header(data) == expected


@pytest.mark.parametrize(("version", "text"), [(279, "2.79"), (402, "4.2"), (405, "4.5"), (500, "5.0"),
                                                (502, "5.2"), (1203, "12.3")])
def test_file_version_is_100_major_plus_minor(version, text):
    header = BlendHeader(version, 1, 8, True, None)
    assert header.blender_version_text == text
    assert header.blender_version == tuple(int(x) for x in text.split("."))


@pytest.mark.parametrize("data", [
    b"", b"BLENDER", b"BLENDER-v40", b"BLENDER*v402", b"BLENDER-x402", b"BLENDER-v4a2",
    b"BLENDER18-01v0600", b"BLENDER17-01v05", b"BLENDER17_01v0500", b"PK\x03\x04-not-a-blend",
    b"glTF\x02\x00\x00\x00",
])
def test_anything_else_is_no_header(data):
    assert decode_header(data) is None


def _zstd_frame(block: bytes, block_type: int, content_size: int) -> bytes:
    """A one-block zstd frame (RFC 8878 3.1.1): single segment, a 1- or 2-byte content size."""
    if content_size < 256:
        descriptor, size = bytes([0b0010_0000]), bytes([content_size])
    else:
        descriptor, size = bytes([0b0110_0000]), (content_size - 256).to_bytes(2, "little")
    header = (1 | block_type << 1 | len(block) << 3).to_bytes(3, "little")  # last block
    return b"\x28\xb5\x2f\xfd" + descriptor + size + header + block


def test_zstd_raw_block(tmp_path):
    data = LARGE_50 + bytes(300)
    path = tmp_path / "raw.blend"
    path.write_bytes(_zstd_frame(data, 0, len(data)))
    assert read_blend_header(path) == BlendHeader(500, 1, 8, True, "zstd")


@pytest.mark.parametrize("size_format", [0, 1, 3])
def test_zstd_compressed_block_with_raw_literals(tmp_path, size_format):
    """What Blender writes: a compressed block whose literals section is stored raw."""
    literals = LEGACY_42 if size_format == 0 else LEGACY_42 + bytes(300)
    n = len(literals)
    if size_format == 0:
        section = bytes([n << 3])
    elif size_format == 1:
        section = bytes([0b0100 | (n & 0x0F) << 4, n >> 4])
    else:
        section = bytes([0b1100 | (n & 0x0F) << 4, (n >> 4) & 0xFF, n >> 12])
    block = section + literals + b"\x00"  # no sequences
    path = tmp_path / "literals.blend"
    path.write_bytes(_zstd_frame(block, 2, n))
    assert read_blend_header(path) == BlendHeader(402, 0, 8, True, "zstd")


@pytest.mark.parametrize("literals_type", [1, 2, 3])
def test_zstd_literals_it_cannot_read_give_no_version(tmp_path, literals_type):
    """RLE, Huffman-coded or treeless literals are not decoded here: unknown, never a guess."""
    block = bytes([literals_type | 20 << 3]) + LEGACY_42 + b"\x00"
    path = tmp_path / "huffman.blend"
    path.write_bytes(_zstd_frame(block, 2, 20))
    assert read_blend_header(path) is None


def test_zstd_from_a_real_encoder_is_read_right_or_not_at_all(tmp_path):
    """The zstandard library (a dependency of the bpy wheel) as the encoder: short inputs give
    raw literals, which are read; whatever layout it picks, the version read is never wrong."""
    zstandard = pytest.importorskip("zstandard")
    read = 0
    for tail in (b"", bytes(100), b"REND" * 4000, bytes(range(256)) * 400):
        for level in (1, 3, 19):
            path = tmp_path / "z.blend"
            path.write_bytes(zstandard.ZstdCompressor(level=level).compress(LARGE_50 + tail))
            header = read_blend_header(path)
            assert header in (None, BlendHeader(500, 1, 8, True, "zstd"))
            read += header is not None
    assert read >= 3


def test_gzip_from_old_blenders(tmp_path):
    path = tmp_path / "old.blend"
    path.write_bytes(gzip.compress(b"BLENDER_v279REND" + bytes(1000)))
    assert read_blend_header(path) == BlendHeader(279, 0, 4, True, "gzip")


def test_broken_gzip_and_missing_files_give_none(tmp_path):
    broken = tmp_path / "broken.blend"
    broken.write_bytes(gzip.compress(LEGACY_42 * 10)[:12])
    assert read_blend_header(broken) is None
    assert read_blend_header(tmp_path / "missing.blend") is None


def test_newer_blender_message(tmp_path):
    path = tmp_path / "five.blend"
    path.write_bytes(LARGE_50 + bytes(100))
    assert newer_blender_message(path, (3, 4, 1)) == (
        "saved by Blender 5.0, newer than this Blender 3.4: open it with Blender 5.0 or newer")
    assert newer_blender_message(path, (4, 5, 15)).startswith("saved by Blender 5.0, newer than this Blender 4.5")
    # The same or a newer Blender: not the reason it was refused.
    assert newer_blender_message(path, (5, 0, 1)) is None
    assert newer_blender_message(path, (5, 2, 3)) is None
    path.write_bytes(b"not a blend file at all")
    assert newer_blender_message(path, (3, 4, 1)) is None


def test_a_zstd_decoder_reads_what_the_standard_library_cannot(tmp_path):
    """Huffman-coded literals (as Blender 5.2 writes): read with the decoder given, and a
    decoder failing on a corrupt stream leaves the version unknown."""
    zstandard = pytest.importorskip("zstandard")
    path = tmp_path / "huffman.blend"
    # Bytes of a skewed distribution with few repeats: the encoder Huffman-codes the literals.
    pick = random.Random(1).choice
    data = b"BLENDER17-01v0502REND" + bytes(pick(b"aaaaaaabbbcde") for _ in range(100_000))
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
    try:
        import compression.zstd  # noqa: F401  (Python 3.14 reads it with the standard library)
    except ImportError:
        assert read_blend_header(path) is None  # the standard library alone cannot read it

    def decompress(prefix: bytes) -> bytes:
        return zstandard.ZstdDecompressor().decompressobj().decompress(prefix)

    assert read_blend_header(path, decompress) == BlendHeader(502, 1, 8, True, "zstd")
    assert newer_blender_message(path, (5, 0, 1), decompress).startswith("saved by Blender 5.2, newer than")

    def failing(prefix: bytes) -> bytes:
        raise zstandard.ZstdError("corrupt")

    assert read_blend_header(path, failing) is None
