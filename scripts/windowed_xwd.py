# SPDX-License-Identifier: GPL-3.0-or-later
"""Convert the walk's ``xwd -root`` screenshots to PNG (numpy and the standard library only).

    python scripts/windowed_xwd.py FOLDER

Every FOLDER/*.xwd becomes FOLDER/*.png and is removed.  Reads the true-colour ZPixmap
that Xvfb's 24-bit screen gives (32 bits a pixel, either byte order, masks from the header);
anything else is an error naming the file.  Also says how many pixels of each image are not
black, so a black capture is visible in the log.
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

import numpy as np

HEADER_FIELDS = 25


def read_xwd(path: Path) -> np.ndarray:
    """(H, W, 3) uint8 RGB of an XWD file."""
    data = path.read_bytes()
    if len(data) < 4 * HEADER_FIELDS:
        raise ValueError(f"{path}: {len(data)} bytes, too short for an XWD header")
    h = struct.unpack(">25I", data[:4 * HEADER_FIELDS])
    (header_size, version, fmt, _depth, width, height, _xoff, byte_order, _unit, _bit_order, _pad, bpp,
     bytes_per_line, _visual, red_mask, green_mask, blue_mask, _bits_rgb, _entries, ncolors) = h[:20]
    if version != 7 or fmt != 2 or bpp != 32:
        raise ValueError(f"{path}: XWD version {version}, format {fmt}, {bpp} bits a pixel; "
                         "only version 7 true-colour ZPixmap at 32 bits is read")
    start = header_size + 12 * ncolors
    rows = np.frombuffer(data, dtype=np.uint8, count=height * bytes_per_line, offset=start)
    words = rows.reshape(height, bytes_per_line)[:, :4 * width].copy().view("<u4" if byte_order == 0 else ">u4")
    out = np.empty((height, width, 3), dtype=np.uint8)
    for channel, mask in enumerate((red_mask, green_mask, blue_mask)):
        shift = (mask & -mask).bit_length() - 1
        out[..., channel] = ((words & mask) >> shift).astype(np.uint8)
    return out


def write_png(path: Path, rgb: np.ndarray) -> None:
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    path.write_bytes(png)


def main(folder: str) -> int:
    shots = sorted(Path(folder).glob("*.xwd"))
    for shot in shots:
        rgb = read_xwd(shot)
        write_png(shot.with_suffix(".png"), rgb)
        lit = int(rgb.any(axis=2).sum())
        print(f"{shot.with_suffix('.png').name}: {rgb.shape[1]}x{rgb.shape[0]}, {lit} pixels not black")
        shot.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "out/windowed"))
