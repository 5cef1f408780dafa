# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared helpers of the triage scripts: load a file into bpy, read what Blender holds with
plain loops (never skin_audit's readers), and compare with what an engine or exporter shows.

Nothing here imports skin_audit: the triage is an independent check of the audit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
#: Visible on screen: one pixel when the character fills a 1000-pixel-high view.
VISIBLE_RELATIVE = 1e-3


def load(bpy, path: Path) -> None:
    """Open a .blend, or import a glTF (a .vrm is a glTF binary) / FBX into an empty scene, with Blender's defaults."""
    suffix = path.suffix.lower()
    if suffix == ".blend":
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False)
    else:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        if suffix in (".glb", ".gltf", ".vrm"):
            bpy.ops.import_scene.gltf(filepath=str(path))
        else:
            bpy.ops.import_scene.fbx(filepath=str(path))
    for obj in list(bpy.context.view_layer.objects):
        if obj.mode != "OBJECT":
            bpy.context.view_layer.objects.active = obj
            bpy.ops.object.mode_set(mode="OBJECT")


def armature_of(obj):
    for m in obj.modifiers:
        if m.type == "ARMATURE" and m.object is not None:
            return m.object
    return None


def skinned(bpy) -> list:
    return [o for o in bpy.context.scene.objects if o.type == "MESH" and armature_of(o) is not None]


def own_weights(obj) -> tuple[list[str], np.ndarray]:
    """(group names, (V, G) weights), one ``v.groups`` entry at a time."""
    names = [g.name for g in obj.vertex_groups]
    w = np.zeros((len(obj.data.vertices), len(names)))
    for v in obj.data.vertices:
        for g in v.groups:
            w[v.index, g.group] = g.weight
    return names, w


def deform_columns(obj, names: list[str]) -> np.ndarray:
    """Indices of the groups that name a deform bone of the mesh's armature."""
    arm = armature_of(obj)
    deform = {b.name for b in arm.data.bones if b.use_deform}
    return np.array([i for i, n in enumerate(names) if n in deform], dtype=int)


def world_positions(bpy, obj, evaluated: bool = True) -> np.ndarray:
    """(V, 3) world positions of the mesh, Blender's evaluated mesh or the original data."""
    if evaluated:
        dg = bpy.context.evaluated_depsgraph_get()
        ev = obj.evaluated_get(dg)
        data = ev.to_mesh()
        co = np.array([v.co[:] for v in data.vertices])
        mw = np.array(ev.matrix_world)
        ev.to_mesh_clear()
    else:
        co = np.array([v.co[:] for v in obj.data.vertices])
        mw = np.array(obj.matrix_world)
    return co @ mw[:3, :3].T + mw[:3, 3]


def size_of(points: np.ndarray) -> float:
    """Largest extent of the bounding box."""
    return float(np.ptp(points, axis=0).max()) if len(points) else 0.0


def edges_of(obj) -> np.ndarray:
    return np.array([e.vertices[:] for e in obj.data.edges], dtype=int).reshape(-1, 2)


def components(n: int, edges: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Connected-component label of every kept vertex (-1 elsewhere), edges between kept vertices."""
    parent = np.arange(n)

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges:
        if keep[a] and keep[b]:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[ra] = rb
    return np.array([find(i) if keep[i] else -1 for i in range(n)])


def write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=float) + "\n")
