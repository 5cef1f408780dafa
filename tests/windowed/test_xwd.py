# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/windowed_xwd.py on XWD files built here byte by byte (the X11 XWD layout: a
100-byte big-endian header, the window name, the colour map, then the rows), and the PNG it
writes read back by zlib alone."""

from __future__ import annotations

import importlib.util
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "windowed_xwd.py"
spec = importlib.util.spec_from_file_location("windowed_xwd", SCRIPT)
xwd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(xwd)


def make_xwd(pixels: list[list[tuple[int, int, int]]], *, lsb: bool, pad: int = 0, ncolors: int = 2) -> bytes:
    """A 24-bit TrueColor ZPixmap at 32 bits a pixel, as Xvfb's xwd -root writes it."""
    height, width = len(pixels), len(pixels[0])
    name = b"xwdump\x00"
    bytes_per_line = 4 * width + pad
    header = [100 + len(name), 7, 2, 24, width, height, 0, 0 if lsb else 1, 32, 0 if lsb else 1, 32, 32,
              bytes_per_line, 4, 0xFF0000, 0x00FF00, 0x0000FF, 8, 256, ncolors, width, height, 0, 0, 0]
    rows = b""
    for row in pixels:
        for r, g, b in row:
            word = (r << 16) | (g << 8) | b
            rows += struct.pack("<I" if lsb else ">I", word)
        rows += b"\xee" * pad
    return struct.pack(">25I", *header) + name + b"\x00" * 12 * ncolors + rows


def read_png(path: Path) -> np.ndarray:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
            assert body[8:10] == b"\x08\x02", "8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height = size
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert (raw[:, 0] == 0).all(), "filter type None on every row"
    return raw[:, 1:].reshape(height, width, 3)


PIXELS = [[(255, 0, 0), (0, 255, 0), (0, 0, 255)], [(1, 2, 3), (0, 0, 0), (250, 128, 7)]]


@pytest.mark.parametrize("lsb", [True, False])
@pytest.mark.parametrize("pad", [0, 4])
def test_xwd_to_png_keeps_every_pixel(tmp_path, lsb, pad):
    shot = tmp_path / "00-step.xwd"
    shot.write_bytes(make_xwd(PIXELS, lsb=lsb, pad=pad))
    assert xwd.main(str(tmp_path)) == 0
    assert not shot.exists()
    assert read_png(tmp_path / "00-step.png").tolist() == [[list(p) for p in row] for row in PIXELS]


def test_other_formats_are_refused_by_name(tmp_path):
    data = bytearray(make_xwd(PIXELS, lsb=True))
    data[44:48] = struct.pack(">I", 16)  # bits per pixel
    shot = tmp_path / "bad.xwd"
    shot.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="bad.xwd.*16 bits a pixel"):
        xwd.read_xwd(shot)
    shot.write_bytes(b"\x00" * 10)
    with pytest.raises(ValueError, match="too short"):
        xwd.read_xwd(shot)
