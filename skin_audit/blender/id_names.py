# SPDX-License-Identifier: GPL-3.0-or-later
"""Names a .blend stores that are not valid UTF-8, made readable after a load.

Blender stores names as bytes; Python's ``bpy`` raises UnicodeDecodeError on every read
of such a name (``obj.name``), so nothing could be audited. After a load the loaded data
(never the file: the audit never saves) takes each such name with its invalid bytes
written out as ``\\xNN`` (``Body\\xff``), and the audit runs and reports under that name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import bpy


def _readable(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _items() -> Iterator[Any]:
    """Every ID of the loaded data, then the named parts of objects and armatures."""
    for prop in bpy.data.bl_rna.properties:
        if prop.type != "COLLECTION":
            continue
        coll = getattr(bpy.data, prop.identifier, None)
        if coll is None or not hasattr(coll, "__iter__") or prop.identifier in ("window_managers", "workspaces",
                                                                                "screens"):
            continue
        yield from coll
    for arm in bpy.data.armatures:
        if arm.library is None:
            yield from arm.bones
    for obj in bpy.data.objects:
        if obj.library is None:
            yield from obj.vertex_groups
            yield from obj.modifiers
    for key in bpy.data.shape_keys:
        if key.library is None:
            yield from key.key_blocks


def _rename(items: Iterable[Any]) -> list[tuple[str, str]]:
    renamed = []
    for item in items:
        try:
            item.name  # noqa: B018 - reading the name is the test
        except UnicodeDecodeError as exc:
            raw = exc.object if isinstance(exc.object, bytes) else bytes(exc.object)
            if getattr(item, "library", None) is not None:
                continue  # linked data cannot be renamed here; its library must be fixed
            new = _readable(raw)
            item.name = new
            renamed.append((new, type(item).__name__))
    return renamed


def repair_names() -> list[tuple[str, str]]:
    """Rename what has a name that is not valid UTF-8; (new name, kind) of each, in the loaded data only."""
    return _rename(_items())
