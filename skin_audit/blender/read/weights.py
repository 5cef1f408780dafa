# SPDX-License-Identifier: GPL-3.0-or-later
"""Vertex-group weights into numpy, fast, by the path that suits the mesh.

A Python loop over ``v.groups`` costs ~3.8 s per million vertices.  Two faster paths:

- **dense** (few groups, many vertices): a Geometry Nodes modifier on a sandbox copy reads
  every group with Named Attribute and stores it as a plain float attribute, which
  ``foreach_get`` reads in one call per group.  Its cost grows with groups x vertices plus
  a fixed cost per group (a node pair and an attribute).  The copy's groups are renamed
  first so a group called like a built-in attribute ("position") cannot be misread.
- **sparse** (many groups, few weights a vertex, e.g. a Rigify body: 160 groups): the
  ``bmesh`` deform layer lists each vertex's (group, weight) pairs; its cost grows with the
  number of stored weights only.

``choose_path`` picks by a cost model measured with ``scripts/benchmark.py`` on this
project's machine; both paths give identical arrays (tests/blender/test_weights.py).
"""

from __future__ import annotations

import bpy
import numpy as np
from numpy.typing import NDArray

from ..sandbox import PREFIX, sandbox

#: Below this many vertices the plain loop is as fast and needs no node tree.
LOOP_LIMIT = 5000
#: Cost model (seconds), measured: dense = groups * (PER_GROUP + vertices * PER_CELL);
#: sparse = vertices * PER_VERTEX (about four stored weights a vertex).
DENSE_PER_GROUP = 0.025
DENSE_PER_CELL = 1.2e-7
SPARSE_PER_VERTEX = 1.6e-5


def choose_path(vertices: int, groups: int) -> str:
    """``"loop"``, ``"dense"`` or ``"sparse"``: the cheaper read for a mesh of this shape."""
    if groups == 0 or vertices < LOOP_LIMIT or bpy.app.version < (4, 0, 0):
        return "loop"
    dense = groups * (DENSE_PER_GROUP + vertices * DENSE_PER_CELL)
    return "dense" if dense <= vertices * SPARSE_PER_VERTEX else "sparse"


def group_weights_loop(mesh: bpy.types.Mesh, group_count: int) -> NDArray[np.float32]:
    """(G, V) float32 weights by looping over each vertex's groups."""
    weights = np.zeros((group_count, len(mesh.vertices)), dtype=np.float32)
    for v in mesh.vertices:
        for g in v.groups:
            if 0 <= g.group < group_count:
                weights[g.group, v.index] = g.weight
    return weights


def _extract_tree(count: int) -> bpy.types.NodeTree:
    tree = bpy.data.node_groups.new(PREFIX + "weights", "GeometryNodeTree")
    tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    group_in = tree.nodes.new("NodeGroupInput")
    group_out = tree.nodes.new("NodeGroupOutput")
    socket = group_in.outputs[0]
    for i in range(count):
        read = tree.nodes.new("GeometryNodeInputNamedAttribute")
        read.data_type = "FLOAT"
        read.inputs["Name"].default_value = f"{PREFIX}vg{i}"
        store = tree.nodes.new("GeometryNodeStoreNamedAttribute")
        store.data_type = "FLOAT"
        store.domain = "POINT"
        store.inputs["Name"].default_value = f"{PREFIX}w{i}"
        tree.links.new(socket, store.inputs["Geometry"])
        tree.links.new(read.outputs["Attribute"], store.inputs["Value"])
        socket = store.outputs["Geometry"]
    tree.links.new(socket, group_out.inputs[0])
    return tree


def group_weights_sparse(mesh: bpy.types.Mesh, group_count: int) -> NDArray[np.float32]:
    """(G, V) float32 weights from the ``bmesh`` deform layer: one Python step per vertex, not per group."""
    import bmesh  # Blender's own module; imported here so the rest of the file needs bpy only

    weights = np.zeros((group_count, len(mesh.vertices)), dtype=np.float32)
    bm = bmesh.new()
    try:
        bm.from_mesh(mesh)
        layer = bm.verts.layers.deform.active
        if layer is None:
            return weights
        rows = [tuple(v[layer].items()) for v in bm.verts]
    finally:
        bm.free()
    counts = np.fromiter(map(len, rows), dtype=np.intp, count=len(rows))
    if not counts.sum():
        return weights
    pairs = np.array([kv for row in rows for kv in row], dtype=np.float64).reshape(-1, 2)
    group = pairs[:, 0].astype(np.intp)
    vertex = np.repeat(np.arange(len(rows), dtype=np.intp), counts)
    ok = (group >= 0) & (group < group_count)  # entries for a deleted group are ignored, as Blender does
    weights[group[ok], vertex[ok]] = pairs[ok, 1]
    return weights


def group_weights(obj: bpy.types.Object, path: str | None = None) -> NDArray[np.float32]:
    """(G, V) float32: row g holds ``obj.vertex_groups[g]``'s weight of every vertex (0 if absent).

    ``path`` forces ``"loop"``, ``"dense"`` or ``"sparse"`` (tests, benchmark); by default
    ``choose_path`` picks the cheaper one for this mesh.
    """
    mesh = obj.data
    count = len(obj.vertex_groups)
    path = path or choose_path(len(mesh.vertices), count)
    if path == "loop":
        return group_weights_loop(mesh, count)
    if path == "sparse":
        return group_weights_sparse(mesh, count)
    weights = np.zeros((count, len(mesh.vertices)), dtype=np.float32)
    with sandbox() as box:
        copy = box.track(bpy.data.meshes, mesh.copy())  # implicit sharing: cheap
        tmp = box.track(bpy.data.objects, bpy.data.objects.new(PREFIX + "weights", copy))
        box.scene.collection.objects.link(tmp)
        for i, group in enumerate(tmp.vertex_groups):
            group.name = f"{PREFIX}vg{i}"
        tree = box.track(bpy.data.node_groups, _extract_tree(count))
        tmp.modifiers.new("extract", "NODES").node_group = tree
        attributes = tmp.evaluated_get(box.depsgraph()).data.attributes
        for i in range(count):
            attributes[f"{PREFIX}w{i}"].data.foreach_get("value", weights[i])
    return weights
