# SPDX-License-Identifier: GPL-3.0-or-later
"""Skins (glTF 2.0, 3.7.3): joint matrices at a pose and the skinned primitives' data.

``JOINTS_n`` values index ``skin.joints`` (not nodes); a skin without
``inverseBindMatrices`` uses identity matrices; the skinned mesh node's own transform is
ignored when skinning (3.7.3.3), so joint matrices are ``world(joint) @ IBM``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .animation import InterpolationRule, animated_transforms, find_animation
from .document import GltfDocument, accessor_info, as_matrices, read_accessor, read_accessor_stored
from .scene import RotationRule, local_matrices, node_parents, rest_transforms, world_matrices


@dataclass(frozen=True)
class InfluenceSet:
    """One ``JOINTS_n``/``WEIGHTS_n`` pair of a primitive, as stored and as float."""

    set_index: int
    joints: NDArray[np.int64]  # (V, 4) indices into skin.joints
    weights: NDArray[np.float64]  # (V, 4) dequantised per 3.11, never normalised
    weights_stored: NDArray[Any]  # (V, 4) the file's integers or floats
    weight_component_type: int
    weight_normalized: bool
    joints_accessor: int
    weights_accessor: int


@dataclass(frozen=True)
class SkinnedPrimitive:
    """A primitive drawn by a node that has both ``mesh`` and ``skin``."""

    node: int
    mesh: int
    primitive: int
    skin: int
    positions: NDArray[np.float64]  # (V, 3) bind-space POSITION
    sets: tuple[InfluenceSet, ...]
    #: Morph target POSITION displacements, one (V, 3) array per target (3.7.2.2).
    morph_positions: tuple[NDArray[np.float64], ...] = ()
    #: Default morph weights: the node's ``weights``, else the mesh's, else zeros.
    morph_weights: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @property
    def label(self) -> str:
        return f"node {self.node} mesh {self.mesh} primitive {self.primitive}"


def skin_joints(doc: GltfDocument, skin: int) -> list[int]:
    """Node indices of ``skins[skin].joints``."""
    s = doc.item("skins", skin, "skin")
    joints = s.get("joints")
    if not isinstance(joints, list) or not joints:
        raise doc.fail(f"skin {skin}", "joints must be a non-empty array of node indices")
    for j in joints:
        doc.item("nodes", j, f"skin {skin} joints")
    return list(joints)


def inverse_bind_matrices(doc: GltfDocument, skin: int) -> NDArray[np.float64]:
    """The skin's inverse bind matrices; identity when the accessor is absent (3.7.3.1).

    Returns
    -------
    (J, 4, 4) float64

    Raises
    ------
    GltfError
        Wrong count or type, or a non-finite entry (named by joint slot).
    """
    s = doc.item("skins", skin, "skin")
    n = len(skin_joints(doc, skin))
    if "inverseBindMatrices" not in s:
        return np.tile(np.eye(4), (n, 1, 1))
    index = s["inverseBindMatrices"]
    where = f"skin {skin} inverseBindMatrices"
    acc = accessor_info(doc, index, where)
    if acc["type"] != "MAT4" or acc["componentType"] != 5126:
        raise doc.fail(f"accessor {index} ({where})", f"must be MAT4 FLOAT, found {acc['type']} {acc['componentType']}")
    mats = as_matrices(read_accessor(doc, index, where))
    if len(mats) < n:
        raise doc.fail(f"accessor {index} ({where})", f"has {len(mats)} matrices for {n} joints")
    bad = np.flatnonzero(~np.all(np.isfinite(mats.reshape(len(mats), -1)), axis=1))
    if len(bad):
        raise doc.fail(
            f"accessor {index} ({where})",
            f"{len(bad)} inverse bind matrices are not finite (NaN or infinite; joint slots {bad[:5].tolist()}); "
            "re-export the skin",
        )
    return mats[:n]


def _influence_sets(doc: GltfDocument, attributes: dict[str, Any], where: str, count: int) -> tuple[InfluenceSet, ...]:
    sets = []
    n = 0
    while f"JOINTS_{n}" in attributes or f"WEIGHTS_{n}" in attributes:
        ja, wa = attributes.get(f"JOINTS_{n}"), attributes.get(f"WEIGHTS_{n}")
        if ja is None or wa is None:
            raise doc.fail(where, f"has {'JOINTS' if ja is not None else 'WEIGHTS'}_{n} without its pair")
        jacc = accessor_info(doc, ja, f"{where} JOINTS_{n}")
        wacc = accessor_info(doc, wa, f"{where} WEIGHTS_{n}")
        if jacc["type"] != "VEC4" or jacc["componentType"] not in (5121, 5123):
            raise doc.fail(
                f"accessor {ja} ({where} JOINTS_{n})", "must be VEC4 UNSIGNED_BYTE or UNSIGNED_SHORT (3.7.3.1)"
            )
        if wacc["type"] != "VEC4" or wacc["componentType"] not in (5126, 5121, 5123):
            raise doc.fail(
                f"accessor {wa} ({where} WEIGHTS_{n})", "must be VEC4 FLOAT or normalised UNSIGNED_BYTE/SHORT"
            )
        if wacc["componentType"] != 5126 and not wacc.get("normalized"):
            raise doc.fail(f"accessor {wa} ({where} WEIGHTS_{n})", "integer weights must have normalized: true")
        stored = read_accessor_stored(doc, wa, f"{where} WEIGHTS_{n}")
        joints = read_accessor_stored(doc, ja, f"{where} JOINTS_{n}").astype(np.int64)
        weights = read_accessor(doc, wa, f"{where} WEIGHTS_{n}")
        if len(joints) != count or len(weights) != count:
            raise doc.fail(
                where, f"JOINTS_{n}/WEIGHTS_{n} have {len(joints)}/{len(weights)} elements for {count} vertices"
            )
        sets.append(
            InfluenceSet(
                set_index=n,
                joints=joints,
                weights=weights,
                weights_stored=stored,
                weight_component_type=wacc["componentType"],
                weight_normalized=bool(wacc.get("normalized")),
                joints_accessor=ja,
                weights_accessor=wa,
            )
        )
        n += 1
    return tuple(sets)


def _morph_positions(
    doc: GltfDocument, targets: list[dict[str, Any]], where: str, count: int
) -> tuple[NDArray[np.float64], ...]:
    out = []
    if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
        raise doc.fail(where, "targets must be a JSON array of objects")
    for k, target in enumerate(targets):
        if "POSITION" not in target:
            out.append(np.zeros((count, 3)))  # a target that moves normals only
            continue
        d = read_accessor(doc, target["POSITION"], f"{where} target {k} POSITION")
        if d.shape != (count, 3):
            raise doc.fail(where, f"morph target {k} POSITION has shape {d.shape}, expected ({count}, 3)")
        out.append(d)
    return tuple(out)


def skinned_primitives(doc: GltfDocument) -> list[SkinnedPrimitive]:
    """Every primitive of every node with a mesh and a skin, in node then primitive order."""
    out = []
    for i, node in enumerate(doc.items("nodes")):
        if "mesh" not in node or "skin" not in node:
            continue
        skin = node["skin"]
        doc.item("skins", skin, f"node {i} skin")
        skin_joints(doc, skin)
        mesh = doc.item("meshes", node["mesh"], f"node {i}")
        primitives = mesh.get("primitives", [])
        if not isinstance(primitives, list):
            raise doc.fail(f"mesh {node['mesh']}",
                           f"primitives must be a JSON array, found {type(primitives).__name__}")
        for p, prim in enumerate(primitives):
            where = f"mesh {node['mesh']} primitive {p}"
            if not isinstance(prim, dict) or not isinstance(prim.get("attributes", {}), dict):
                raise doc.fail(where, "must be a JSON object whose attributes are a JSON object")
            attrs = prim.get("attributes", {})
            if "POSITION" not in attrs:
                raise doc.fail(where, "has no POSITION")
            pos = read_accessor(doc, attrs["POSITION"], where + " POSITION")
            if pos.shape[1] != 3:
                raise doc.fail(where, "POSITION must be VEC3")
            sets = _influence_sets(doc, attrs, where, len(pos))
            if not sets:
                continue
            morphs = _morph_positions(doc, prim.get("targets", []), where, len(pos))
            declared = node.get("weights", mesh.get("weights", [0.0] * len(morphs)))
            try:
                defaults = np.asarray(declared, dtype=np.float64)
            except (TypeError, ValueError):
                raise doc.fail(where, f"default morph weights {declared!r} are not numbers") from None
            if defaults.shape != (len(morphs),):
                raise doc.fail(where, f"has {len(morphs)} morph targets but {defaults.size} default weights")
            out.append(
                SkinnedPrimitive(
                    node=i,
                    mesh=node["mesh"],
                    primitive=p,
                    skin=skin,
                    positions=pos,
                    sets=sets,
                    morph_positions=morphs,
                    morph_weights=defaults,
                )
            )
    return out


@dataclass(frozen=True)
class Pose:
    """World matrices of every node at one time of one clip."""

    world: NDArray[np.float64]  # (N, 4, 4)
    animation: int | None
    time: float


def pose_at(
    doc: GltfDocument,
    clip: str | int | None = None,
    time: float | None = None,
    interpolation: InterpolationRule = "spec",
    rotation: RotationRule = "normalise",
) -> Pose:
    """Every node's world matrix with the clip sampled at ``time`` seconds (rest when None).

    Parameters
    ----------
    doc : GltfDocument
    clip : str, int or None
        Animation name or index; the first animation when None.
    time : float or None
        Seconds; None keeps the rest transforms.
    interpolation, rotation
        How the runtime interpolates and converts quaternions (``"spec"``/``"normalise"``
        or three.js's ``"threejs"``/``"as_stored"``).
    """
    rest = rest_transforms(doc)
    anim = find_animation(doc, clip) if time is not None else None
    trs = animated_transforms(doc, rest, anim, float(time), interpolation) if time is not None else rest
    world = world_matrices(node_parents(doc), local_matrices(trs, rotation))
    return Pose(world=world, animation=anim, time=float(time) if time is not None else 0.0)


def joint_matrices(doc: GltfDocument, skin: int, world: NDArray[np.float64]) -> NDArray[np.float64]:
    """Skinning matrices ``world(joint_j) @ IBM_j`` (3.7.3.3), the mesh node's transform ignored.

    Parameters
    ----------
    doc : GltfDocument
    skin : int
    world : (N, 4, 4) float64
        Node world matrices from :func:`pose_at`.

    Returns
    -------
    (J, 4, 4) float64
    """
    joints = skin_joints(doc, skin)
    ibm = inverse_bind_matrices(doc, skin)
    # jab,jbc->jac: each joint's world matrix times its inverse bind matrix.
    out: NDArray[np.float64] = np.einsum("jab,jbc->jac", world[joints], ibm)
    return out
