# SPDX-License-Identifier: GPL-3.0-or-later
"""Depth-first order of a forest given by parent indices: every subtree as one slice."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

#: ``order``, ``tin``, ``tout`` (see ``depth_first``).
DepthFirst = tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]


def depth_first(parents: Sequence[int] | NDArray[np.intp]) -> DepthFirst:
    """Nodes in depth-first order (roots in index order, children in index order), and each
    node's entry and exit positions in it: node ``j``'s subtree is ``order[tin[j]:tout[j]]``,
    ``j`` first, and ``a`` is at or above ``b`` iff ``tin[a] <= tin[b] < tout[a]``.

    Parameters
    ----------
    parents : (J,) int, each node's parent, -1 for a root
    """
    parents = [int(p) for p in parents]
    children: list[list[int]] = [[] for _ in parents]
    for j, p in enumerate(parents):
        if p >= 0:
            children[p].append(j)
    order = np.empty(len(parents), dtype=np.intp)
    tin = np.empty(len(parents), dtype=np.intp)
    tout = np.empty(len(parents), dtype=np.intp)
    clock = 0
    for root in (j for j, p in enumerate(parents) if p < 0):
        stack = [(root, False)]
        while stack:
            here, done = stack.pop()
            if done:
                tout[here] = clock
                continue
            order[clock] = here
            tin[here] = clock
            clock += 1
            stack.append((here, True))
            stack.extend((c, False) for c in reversed(children[here]))
    return order, tin, tout
