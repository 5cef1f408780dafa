# SPDX-License-Identifier: GPL-3.0-or-later
"""The .blend header reader on files this Blender saves, plain and compressed: the version it
reads is the running Blender's own (the 12-byte header up to 4.x, the 17-byte one from 5.0).
Compressed files are read as the audit reads them: with the zstd decoder Blender ships where the
standard library cannot (Blender 5.2 Huffman-codes the header's bytes)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42, pytest.mark.usefixtures("empty_scene")]


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "compressed"])
def test_header_names_the_blender_that_saved_the_file(bpy, tmp_path, compress):
    from skin_audit.blender.run.guarded import zstd_decompressor
    from skin_audit.core.blend_header import newer_blender_message, read_blend_header

    bpy.ops.mesh.primitive_cube_add()
    path = tmp_path / "saved.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), compress=compress, copy=True)
    header = read_blend_header(path, zstd_decompressor())
    assert header is not None, path.read_bytes()[:32]
    assert header.blender_version == tuple(bpy.app.version[:2])
    # Blender 3.0 and newer compress with zstd; 5.0 introduced the 17-byte header.
    assert header.compression == ("zstd" if compress else None)
    assert header.format_version == (1 if bpy.app.version >= (5, 0, 0) else 0)
    assert (header.pointer_size, header.little_endian) == (8, True)
    assert newer_blender_message(path, tuple(bpy.app.version), zstd_decompressor()) is None
    older = (bpy.app.version[0] - 1, 9, 0)
    assert newer_blender_message(path, older, zstd_decompressor()) == (
        f"saved by Blender {header.blender_version_text}, newer than this Blender {older[0]}.{older[1]}: "
        f"open it with Blender {header.blender_version_text} or newer")
