# SPDX-License-Identifier: GPL-3.0-or-later
"""Where bpy comes from, and a clean scene for headless runs."""

from __future__ import annotations

from ..core.errors import InputError


def require_bpy() -> None:
    """Fail clearly when neither Blender nor the bpy module is available."""
    try:
        import bpy  # noqa: F401
    except ImportError as exc:
        raise InputError(
            "this command needs Blender's Python module: run it with `blender --background --python "
            "scripts/skin_audit_blender.py -- ...`, or install the pinned module with "
            "`pip install -r requirements-dev.txt`"
        ) from exc


def reset_to_empty_scene() -> None:
    """Start from Blender's factory startup file with an empty scene (headless runs only).

    read_homefile, not read_factory_settings: the latter also resets the
    preferences, which disables every add-on, this extension included, in the
    middle of a ``blender --command skin_audit`` run.
    """
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
