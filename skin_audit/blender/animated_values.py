# SPDX-License-Identifier: GPL-3.0-or-later
"""The values of every animated property of the user's data, kept and put back.

A sandbox's depsgraph is made the active one to be evaluated, and an active depsgraph
writes what its animation and drivers computed back to the original data.  The user's
objects it pulls in (the rig a copy is parented to, a constraint's target) are evaluated
there from scratch, animation included: a value the user changed without keying it (a
control tweaked while posing) would be overwritten by its keyframe.  ``AnimatedValues``
reads every animated property before the sandbox evaluates and writes back, after it is
gone, those that changed; the user's own depsgraph leaves animation alone until the frame
changes, so what the user set stays.
"""

from __future__ import annotations

from typing import Any

import bpy

from .actions import action_fcurves, played_actions

#: ``bpy.data`` collections whose datablocks can carry animation and be evaluated by a depsgraph.
ANIMATABLE = ("objects", "meshes", "armatures", "shape_keys", "materials", "node_groups", "curves",
              "hair_curves", "lattices", "cameras", "lights", "worlds", "textures", "particles",
              "pointclouds", "volumes", "grease_pencils", "metaballs", "speakers", "lightprobes")


def _paths(ad: Any) -> set[tuple[str, int]]:
    """(data path, array index) of every property the animation data may write."""
    out = {(fc.data_path, fc.array_index) for fc in ad.drivers}
    for action, _ in played_actions(ad):
        out.update((fc.data_path, fc.array_index) for fc in action_fcurves(action))
    return out


def _read(idb: bpy.types.ID, path: str, index: int) -> Any:
    """The property's value (its ``index`` element for an array); raises if it does not resolve."""
    value = idb.path_resolve(path)
    if isinstance(value, (str, bool, int, float)):
        return value
    return value[index]  # an array, a vector, a colour: one element per F-Curve


def _write(idb: bpy.types.ID, path: str, index: int, value: Any) -> None:
    current = idb.path_resolve(path)
    if not isinstance(current, (str, bool, int, float)):
        current[index] = value  # (an array or a mathutils value wrapping the property: written through)
        return
    if path.endswith('"]'):  # a custom property: owner["name"]
        owner_path, _, key = path[:-2].rpartition('["')
        owner = idb.path_resolve(owner_path) if owner_path else idb
        owner[key] = value
        return
    owner_path, _, name = path.rpartition(".")
    owner = idb.path_resolve(owner_path) if owner_path else idb
    setattr(owner, name, value)


class AnimatedValues:
    """Every animated property's value of every datablock in ``bpy.data`` but those whose name
    starts with ``skip_prefix`` (another sandbox's copies, still open around this one)."""

    def __init__(self, skip_prefix: str) -> None:
        self._values: list[tuple[bpy.types.ID, str, int, Any]] = []
        for kind in ANIMATABLE:
            for idb in getattr(bpy.data, kind, ()):
                ad = getattr(idb, "animation_data", None)
                if ad is None or idb.name.startswith(skip_prefix):
                    continue
                for path, index in _paths(ad):
                    try:
                        self._values.append((idb, path, index, _read(idb, path, index)))
                    except (ValueError, TypeError, IndexError, KeyError, AttributeError):
                        continue  # a path that names nothing (a renamed bone): nothing to keep

    def __len__(self) -> int:
        return len(self._values)

    def restore(self) -> int:
        """Write back every kept value that changed since; returns how many were written."""
        written = 0
        for idb, path, index, value in self._values:
            try:
                if _read(idb, path, index) != value:
                    _write(idb, path, index, value)
                    written += 1
            except (ReferenceError, ValueError, TypeError, IndexError, KeyError, AttributeError):
                continue  # gone, or not writable (a driven or read-only property): left as it is
        return written
