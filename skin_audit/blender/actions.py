# SPDX-License-Identifier: GPL-3.0-or-later
"""The one walker of actions and their F-Curves.

An action's F-Curves live in the channel bags of its layers' strips, one bag per slot
(layered actions, Blender 4.4+), or in its legacy list (Blender 4.2).  An animation data
block plays its assigned action and those of its NLA strips, meta strips' own strips
included (a meta strip holds strips, never an action of its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def channelbags(action: Any) -> Iterator[tuple[int | None, Any]]:
    """(slot handle, F-Curve collection) of every channel bag of ``action``; for a legacy action
    (no layers) its one list, with handle None."""
    layers = getattr(action, "layers", None)
    if layers:
        for layer in layers:
            for strip in layer.strips:
                for bag in getattr(strip, "channelbags", ()):
                    yield bag.slot_handle, bag.fcurves
        return
    legacy = getattr(action, "fcurves", None)  # (removed in Blender 5.0)
    if legacy is not None:
        yield None, legacy


def action_fcurves(action: Any) -> list[Any]:
    """Every F-Curve of ``action``, of any slot."""
    return [fc for _, curves in channelbags(action) for fc in curves]


def slot_fcurves(action: Any, slot: Any) -> list[Any]:
    """The F-Curves ``action`` animates ``slot`` with: a layered action's channel bags of that slot
    only (another slot animates another datablock; no slot, no curves); a legacy action's all."""
    if getattr(action, "layers", None):
        handle = None if slot is None else slot.handle
        return [fc for h, curves in channelbags(action) if h == handle for fc in curves]
    return action_fcurves(action)


def nla_strips(strips: Any) -> Iterator[Any]:
    """Every strip of an NLA track's ``strips``, depth first, meta strips' own strips included."""
    for strip in strips:
        yield strip
        yield from nla_strips(strip.strips)


def played_actions(anim: Any) -> list[tuple[Any, Any]]:
    """(action, slot) of every action an animation data block plays, each pair once: the
    assigned one and every NLA strip's (glTF imports put every animation in a strip); the slot
    is None before Blender 4.4 (or when none is assigned)."""
    if anim is None:
        return []
    found = [(anim.action, getattr(anim, "action_slot", None))]
    found += [(s.action, getattr(s, "action_slot", None)) for t in anim.nla_tracks for s in nla_strips(t.strips)]
    return list({(a.as_pointer(), slot.handle if slot is not None else None): (a, slot)
                 for a, slot in found if a is not None}.values())
