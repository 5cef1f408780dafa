# SPDX-License-Identifier: GPL-3.0-or-later
"""``blender --command skin_audit ...``: the same command line as ``python -m skin_audit``.

Beside ``cli.py`` (not in ``blender/``): it hands Blender the command line, so it sits on top.
"""

from __future__ import annotations

import bpy

#: The word after ``--command``.
COMMAND_ID = "skin_audit"

_handle = None


def execute(argv: list[str]) -> int:
    """Blender's command handler: run the CLI on ``argv`` and return its exit code."""
    from .cli import main

    return main(argv)


def register() -> None:
    global _handle
    _handle = bpy.utils.register_cli_command(COMMAND_ID, execute)


def unregister() -> None:
    global _handle
    if _handle is not None:
        bpy.utils.unregister_cli_command(_handle)
        _handle = None
