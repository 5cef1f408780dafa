# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender UI: settings on the scene, operators and the sidebar panel.

Registration is explicit: the classes in order, then ``Scene.skin_audit`` and
the file-load, undo and redo handlers; unregistration undoes it in reverse.
"""

from __future__ import annotations

import bpy

from . import operators, panels, properties, state

CLASSES = properties.CLASSES + operators.CLASSES + panels.CLASSES


@bpy.app.handlers.persistent
def forget_results(*_args) -> None:
    """Results belong to the file they came from: drop them when another file loads."""
    state.clear()


@bpy.app.handlers.persistent
def results_after_undo(*_args) -> None:
    """Undo restored older data: the last audit may describe data that is gone."""
    state.mark_stale("undo")


@bpy.app.handlers.persistent
def results_after_redo(*_args) -> None:
    """Redo brought newer data back: the last audit may not describe it."""
    state.mark_stale("redo")


HANDLERS = (
    (bpy.app.handlers.load_pre, forget_results),
    (bpy.app.handlers.undo_post, results_after_undo),
    (bpy.app.handlers.redo_post, results_after_redo),
)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    properties.attach()
    for handlers, handler in HANDLERS:
        handlers.append(handler)


def unregister() -> None:
    for handlers, handler in reversed(HANDLERS):
        handlers.remove(handler)
    properties.detach()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    state.clear()
