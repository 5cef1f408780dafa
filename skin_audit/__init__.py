# SPDX-License-Identifier: GPL-3.0-or-later
"""skin_audit: audit skeletal skinning in Blender and headless.

As a Blender extension this package is ``bl_ext.<repo>.skin_audit``; nothing
here imports bpy until ``register()`` runs, so ``skin_audit.core`` stays usable
with numpy alone.
"""

from .core.version import __version__

__all__ = ["__version__", "register", "unregister"]


def register() -> None:
    """Add the sidebar panel, its operators and settings, and ``blender --command skin_audit``."""
    from . import blender_command, ui

    ui.register()
    blender_command.register()


def unregister() -> None:
    """Remove everything ``register()`` added, in reverse order."""
    from . import blender_command, ui

    blender_command.unregister()
    ui.unregister()
