# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender UI: settings on the scene, operators and the sidebar panel.

Registration is explicit: the classes in order, then ``Scene.skin_audit`` and
the file-load handler; unregistration undoes it in reverse.
"""

from __future__ import annotations

import bpy

from . import operators, panels, properties, state

CLASSES = properties.CLASSES + operators.CLASSES + panels.CLASSES


@bpy.app.handlers.persistent
def forget_results(*_args) -> None:
    """Results belong to the file they came from: drop them when another file loads."""
    state.clear()


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    properties.attach()
    bpy.app.handlers.load_pre.append(forget_results)


def unregister() -> None:
    bpy.app.handlers.load_pre.remove(forget_results)
    properties.detach()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    state.clear()
