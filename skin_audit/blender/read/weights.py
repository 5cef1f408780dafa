# SPDX-License-Identifier: GPL-3.0-or-later
"""Vertex-group weights into numpy, fast, by the path that suits the mesh.

A Python loop over ``v.groups`` (``group_weights_loop``, the reference) costs ~5 s per
million vertices.  Two faster paths:

- **dense** (few groups, many vertices): a Geometry Nodes modifier on a sandbox copy reads
  groups with Named Attribute and stores each as a plain float attribute, which
  ``foreach_get`` reads in one call per group.  ``DENSE_BATCH`` groups go through one small
  tree per evaluation, its names re-pointed for the next batch: Blender holds a few float
  arrays at a time, not one per group.  Each group costs a pass over every vertex's
  weights.  The copy's groups are renamed first so a group called like a built-in
  attribute ("position") cannot be misread.
- **sparse** (many groups, few weights a vertex, e.g. a Rigify body: 160 groups): the
  ``bmesh`` deform layer lists each vertex's (group, weight) pairs; its cost grows with the
  number of vertices and stored weights only.

``choose_path`` picks by a cost model measured on this project's machine (bpy 5.0, meshes
of 1k to 1M vertices, 8 to 160 groups, two to four weights a vertex); every path gives
identical arrays (tests/blender/test_weights.py).
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter

import bpy
import numpy as np
from numpy.typing import NDArray

from ...core.errors import InputError
from ..sandbox import PREFIX, sandbox

#: Below this many vertices the sparse read is used: the dense pass's sandbox and tree do not pay.
LOOP_LIMIT = 5000
#: Cost model (seconds, CPU), measured: dense = FIXED + groups * (PER_GROUP + vertices * PER_CELL),
#: sparse = vertices * PER_VERTEX (two to four stored weights a vertex).  Dense wins below
#: about PER_VERTEX / PER_CELL = 54 groups on large meshes.
DENSE_FIXED = 0.004
DENSE_PER_GROUP = 2e-4
DENSE_PER_CELL = 5e-8
SPARSE_PER_VERTEX = 2.7e-6
#: Groups per Geometry Nodes evaluation in the dense path: 8 to 16 measured cheapest on the
#: million-vertex benchmark rig (32 at once: ~10-20% slower, and 128 MB more held by Blender).
DENSE_BATCH = 8


def choose_path(vertices: int, groups: int) -> str:
    """``"dense"`` or ``"sparse"``: the cheaper read for a mesh of this shape."""
    if groups == 0 or vertices < LOOP_LIMIT or bpy.app.version < (4, 0, 0):
        return "sparse"
    dense = DENSE_FIXED + groups * (DENSE_PER_GROUP + vertices * DENSE_PER_CELL)
    return "dense" if dense <= vertices * SPARSE_PER_VERTEX else "sparse"


def group_weights_loop(mesh: bpy.types.Mesh, group_count: int) -> NDArray[np.float32]:
    """(G, V) float32 weights by looping over each vertex's groups."""
    weights = np.zeros((group_count, len(mesh.vertices)), dtype=np.float32)
    for v in mesh.vertices:
        for g in v.groups:
            if 0 <= g.group < group_count:
                weights[g.group, v.index] = g.weight
    return weights


def _extract_tree(tree: bpy.types.NodeTree, count: int) -> list[bpy.types.Node]:
    """Fill ``tree`` to store ``count`` groups as float attributes ``w0``, ``w1``...; its Named Attribute nodes.

    Which groups are read is set on the returned nodes, so one small tree serves every batch.
    """
    tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    group_in = tree.nodes.new("NodeGroupInput")
    group_out = tree.nodes.new("NodeGroupOutput")
    socket = group_in.outputs[0]
    reads = []
    for i in range(count):
        read = tree.nodes.new("GeometryNodeInputNamedAttribute")
        read.data_type = "FLOAT"
        store = tree.nodes.new("GeometryNodeStoreNamedAttribute")
        store.data_type = "FLOAT"
        store.domain = "POINT"
        store.inputs["Name"].default_value = f"{PREFIX}w{i}"
        tree.links.new(socket, store.inputs["Geometry"])
        tree.links.new(read.outputs["Attribute"], store.inputs["Value"])
        socket = store.outputs["Geometry"]
        reads.append(read)
    tree.links.new(socket, group_out.inputs[0])
    return reads


def group_weights_sparse(mesh: bpy.types.Mesh, group_count: int) -> NDArray[np.float32]:
    """(G, V) float32 weights from the ``bmesh`` deform layer: one C call per vertex and list, not per group."""
    import bmesh  # Blender's own module; imported here so the rest of the file needs bpy only

    weights = np.zeros((group_count, len(mesh.vertices)), dtype=np.float32)
    bm = bmesh.new()
    try:
        bm.from_mesh(mesh)
        layer = bm.verts.layers.deform.active
        if layer is None or not len(bm.verts):
            return weights
        # map() over the C methods, no Python loop body: a third less than a loop extending lists.
        entries = list(map(itemgetter(layer), bm.verts))
        kind = type(entries[0])
        counts = np.fromiter(map(len, entries), dtype=np.intp, count=len(entries))
        total = int(counts.sum())
        group = np.fromiter(chain.from_iterable(map(kind.keys, entries)), dtype=np.intp, count=total)
        value = np.fromiter(chain.from_iterable(map(kind.values, entries)), dtype=np.float32, count=total)
    finally:
        bm.free()
    vertex = np.repeat(np.arange(len(counts), dtype=np.intp), counts)
    ok = (group >= 0) & (group < group_count)  # entries for a deleted group are ignored, as Blender does
    weights[group[ok], vertex[ok]] = value[ok]
    return weights


def group_weights_dense(mesh: bpy.types.Mesh, group_count: int) -> NDArray[np.float32]:
    """(G, V) float32 weights through a Geometry Nodes pass on a sandbox copy, ``DENSE_BATCH`` groups at a time.

    Batches keep Blender's copy of the weights small (``DENSE_BATCH`` float arrays, not G) and
    reuse its memory from one evaluation to the next; the tree has one node pair per batch slot.
    """
    weights = np.zeros((group_count, len(mesh.vertices)), dtype=np.float32)
    if group_count == 0:
        return weights
    batch = min(DENSE_BATCH, group_count)
    with sandbox() as box:
        copy = box.track(bpy.data.meshes, mesh.copy())  # implicit sharing: cheap
        tmp = box.track(bpy.data.objects, bpy.data.objects.new(PREFIX + "weights", copy))
        box.scene.collection.objects.link(tmp)
        for i, group in enumerate(tmp.vertex_groups):
            group.name = f"{PREFIX}vg{i}"
        tree = box.track(bpy.data.node_groups, bpy.data.node_groups.new(PREFIX + "weights", "GeometryNodeTree"))
        reads = _extract_tree(tree, batch)
        tmp.modifiers.new("extract", "NODES").node_group = tree
        for start in range(0, group_count, batch):
            stop = min(start + batch, group_count)
            for k, read in enumerate(reads):
                # A slot past the last group reads no attribute (zeros) and is not read back.
                read.inputs["Name"].default_value = f"{PREFIX}vg{start + k}" if start + k < stop else ""
            attributes = tmp.evaluated_get(box.depsgraph()).data.attributes
            for k in range(stop - start):
                attributes[f"{PREFIX}w{k}"].data.foreach_get("value", weights[start + k])
    return weights


def group_weights(obj: bpy.types.Object, path: str | None = None) -> NDArray[np.float32]:
    """(G, V) float32: row g holds ``obj.vertex_groups[g]``'s weight of every vertex (0 if absent).

    ``path`` forces ``"loop"``, ``"dense"`` or ``"sparse"`` (tests, benchmark); by default
    ``choose_path`` picks the cheaper one for this mesh.
    """
    mesh = obj.data
    count = len(obj.vertex_groups)
    if count == 0 and path is None:
        return np.zeros((0, len(mesh.vertices)), dtype=np.float32)
    path = path or choose_path(len(mesh.vertices), count)
    if path == "loop":
        return group_weights_loop(mesh, count)
    if path == "sparse":
        return group_weights_sparse(mesh, count)
    if path != "dense":
        raise InputError(f"group_weights has no path {path!r}: use 'loop', 'dense' or 'sparse'")
    return group_weights_dense(mesh, count)
