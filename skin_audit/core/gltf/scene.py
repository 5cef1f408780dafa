# SPDX-License-Identifier: GPL-3.0-or-later
"""Node hierarchy (glTF 2.0, 3.5): local transforms (matrix or TRS) and world matrices."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from .document import GltfDocument

#: How a runtime turns a node's quaternion into a matrix.
#: ``"normalise"``: the specification's unit quaternion (3.5.2 says rotation is a unit
#: quaternion), so a stored non-unit value is normalised first.  ``"as_stored"``: the
#: quaternion formula applied to the stored value, which three.js does (``Matrix4.compose``).
RotationRule = Literal["normalise", "as_stored"]


@dataclass(frozen=True)
class NodeTransforms:
    """Each node's local transform: TRS (x, y, z, w quaternion) or a full matrix.

    ``translation : (N, 3) float64``, ``rotation : (N, 4) float64`` (x, y, z, w),
    ``scale : (N, 3) float64``, ``matrix : (N, 4, 4) float64`` (row-major, used where
    ``has_matrix`` is True: 3.5.2 forbids animating such nodes).
    """

    translation: NDArray[np.float64]
    rotation: NDArray[np.float64]
    scale: NDArray[np.float64]
    matrix: NDArray[np.float64]
    has_matrix: NDArray[np.bool_]

    def with_channels(
        self,
        translation: dict[int, NDArray[np.float64]],
        rotation: dict[int, NDArray[np.float64]],
        scale: dict[int, NDArray[np.float64]],
    ) -> NodeTransforms:
        """A copy with some nodes' T, R or S replaced (animation output)."""
        t, r, s = self.translation.copy(), self.rotation.copy(), self.scale.copy()
        for node, value in translation.items():
            t[node] = value
        for node, value in rotation.items():
            r[node] = value
        for node, value in scale.items():
            s[node] = value
        return replace(self, translation=t, rotation=r, scale=s)


def _vector(
    doc: GltfDocument, node: dict[str, object], key: str, size: int, default: list[float], where: str
) -> NDArray[np.float64]:
    try:
        value = np.asarray(node.get(key, default), dtype=np.float64)
    except (TypeError, ValueError):
        raise doc.fail(where, f"{key} {node.get(key)!r} is not an array of {size} numbers") from None
    if value.shape != (size,):
        raise doc.fail(where, f"{key} has shape {value.shape}, expected ({size},)")
    if not np.all(np.isfinite(value)):
        raise doc.fail(where, f"{key} {value.tolist()} is not finite")
    return value


def rest_transforms(doc: GltfDocument) -> NodeTransforms:
    """Every node's transform as stored in the file (no animation).

    Returns
    -------
    NodeTransforms
        Arrays of ``N = len(nodes)`` rows.
    """
    nodes = doc.items("nodes")
    n = len(nodes)
    t = np.zeros((n, 3))
    r = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))
    s = np.ones((n, 3))
    m = np.tile(np.eye(4), (n, 1, 1))
    has = np.zeros(n, dtype=bool)
    for i, node in enumerate(nodes):
        where = f"node {i}"
        if "matrix" in node:
            flat = _vector(doc, node, "matrix", 16, [], where)
            m[i] = flat.reshape(4, 4).T  # column-major in the file
            has[i] = True
        t[i] = _vector(doc, node, "translation", 3, [0.0, 0.0, 0.0], where)
        r[i] = _vector(doc, node, "rotation", 4, [0.0, 0.0, 0.0, 1.0], where)
        s[i] = _vector(doc, node, "scale", 3, [1.0, 1.0, 1.0], where)
    return NodeTransforms(translation=t, rotation=r, scale=s, matrix=m, has_matrix=has)


def quaternion_matrices(q: NDArray[np.float64], rule: RotationRule) -> NDArray[np.float64]:
    """3x3 matrices of quaternions (x, y, z, w).

    Parameters
    ----------
    q : (N, 4) float64
    rule : RotationRule
        ``"normalise"`` divides by the length first (a zero quaternion gives NaN: the
        audit reports it); ``"as_stored"`` applies ``1 - 2(y^2 + z^2)``... to the stored value.

    Returns
    -------
    (N, 3, 3) float64
    """
    q = np.asarray(q, dtype=np.float64)
    if rule == "normalise":
        with np.errstate(invalid="ignore", divide="ignore"):
            q = q / np.linalg.norm(q, axis=1, keepdims=True)
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    out = np.empty((len(q), 3, 3))
    out[:, 0, 0] = 1 - 2 * (y * y + z * z)
    out[:, 0, 1] = 2 * (x * y - w * z)
    out[:, 0, 2] = 2 * (x * z + w * y)
    out[:, 1, 0] = 2 * (x * y + w * z)
    out[:, 1, 1] = 1 - 2 * (x * x + z * z)
    out[:, 1, 2] = 2 * (y * z - w * x)
    out[:, 2, 0] = 2 * (x * z - w * y)
    out[:, 2, 1] = 2 * (y * z + w * x)
    out[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def local_matrices(transforms: NodeTransforms, rule: RotationRule = "normalise") -> NDArray[np.float64]:
    """Each node's local matrix ``T @ R @ S`` (3.5.3), or its stored matrix.

    Returns
    -------
    (N, 4, 4) float64
    """
    n = len(transforms.translation)
    out = np.tile(np.eye(4), (n, 1, 1))
    # ij,j->ij per node: rotation columns scaled by S, i.e. R @ diag(S).
    out[:, :3, :3] = quaternion_matrices(transforms.rotation, rule) * transforms.scale[:, None, :]
    out[:, :3, 3] = transforms.translation
    out[transforms.has_matrix] = transforms.matrix[transforms.has_matrix]
    return out


def node_parents(doc: GltfDocument) -> NDArray[np.intp]:
    """Each node's parent index (-1 for roots); a node with two parents or a cycle is an error.

    Returns
    -------
    (N,) intp
    """
    nodes = doc.items("nodes")
    parents = np.full(len(nodes), -1, dtype=np.intp)
    for i, node in enumerate(nodes):
        for c in node.get("children", []):
            doc.item("nodes", c, f"node {i} children")
            if parents[c] != -1:
                raise doc.fail(f"node {c}", f"has two parents (nodes {parents[c]} and {i}); 3.5.1 requires a tree")
            parents[c] = i
    # Each node is walked up to a root once (linear in the nodes: a 10,000-joint chain is a
    # moment): 1 = on the current walk, 2 = known to reach a root.
    state = np.zeros(len(nodes), dtype=np.int8)
    for i in range(len(nodes)):
        walk = []
        p = i
        while p != -1 and state[p] == 0:
            state[p] = 1
            walk.append(p)
            p = int(parents[p])
        if p != -1 and state[p] == 1:
            raise doc.fail(f"node {p}", "is in a cycle of children; 3.5.1 requires a tree")
        state[walk] = 2
    return parents


def world_matrices(parents: NDArray[np.intp], local: NDArray[np.float64]) -> NDArray[np.float64]:
    """World matrices by walking the tree from the roots (parent world @ local).

    Parameters
    ----------
    parents : (N,) intp
    local : (..., N, 4, 4) float64 (leading axes: several poses of the tree at once)

    Returns
    -------
    (..., N, 4, 4) float64
    """
    n = len(parents)
    world = np.empty_like(local)
    done = np.zeros(n, dtype=bool)
    for start in range(n):
        chain = []
        i = start
        while i != -1 and not done[i]:
            chain.append(i)
            i = int(parents[i])
        for node in reversed(chain):
            p = parents[node]
            world[..., node, :, :] = local[..., node, :, :] if p == -1 else \
                world[..., p, :, :] @ local[..., node, :, :]
            done[node] = True
    return world
