# SPDX-License-Identifier: GPL-3.0-or-later
"""skin_audit: audit skeletal skinning in Blender and headless.

As a Blender extension this package is ``bl_ext.<repo>.skin_audit``; nothing
here imports bpy until ``register()`` runs, so ``skin_audit.core`` stays usable
with numpy alone.
"""

__version__ = "0.1.0"


def register() -> None:
    from . import ui

    ui.register()


def unregister() -> None:
    from . import ui

    ui.unregister()
