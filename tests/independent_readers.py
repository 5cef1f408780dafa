# SPDX-License-Identifier: GPL-3.0-or-later
"""The tests' own readers of Blender data: plain loops, independent of skin_audit's fast paths."""

from __future__ import annotations

import numpy as np


def own_weights(obj) -> tuple[tuple[str, ...], np.ndarray]:
    """Group names and (V, G) weights, one ``v.groups`` entry at a time."""
    names = tuple(g.name for g in obj.vertex_groups)
    w = np.zeros((len(obj.data.vertices), len(names)))
    for v in obj.data.vertices:
        for g in v.groups:
            w[v.index, g.group] = g.weight
    return names, w
