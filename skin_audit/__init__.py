# SPDX-License-Identifier: GPL-3.0-or-later
"""skin_audit: audit skeletal skinning in Blender and headless.

As a Blender extension this package is ``bl_ext.<repo>.skin_audit``; nothing
here imports bpy until ``register()`` runs, so ``skin_audit.core`` stays usable
with numpy alone.
"""

__version__ = "0.1.0"


def register() -> None:
    """Add the sidebar panel, its operators and settings, and ``blender --command skin_audit``."""
    from . import ui
    from .blender import cli_command

    ui.register()
    cli_command.register()


def unregister() -> None:
    """Remove everything ``register()`` added, in reverse order."""
    from . import ui
    from .blender import cli_command

    cli_command.unregister()
    ui.unregister()
