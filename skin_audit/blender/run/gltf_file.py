# SPDX-License-Identifier: GPL-3.0-or-later
"""A glTF input: the file read by our own reader (what engines read) beside what Blender's
importer made of it, at the audited frame.  The comparison is core/engines/gltf_audit.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import bpy
import numpy as np

from ...core.audit.engine_target import audit_target, judge_unnormalised
from ...core.audit.options import AuditOptions
from ...core.audit.report import MeshAudit
from ...core.audit.rig_audit import RigAudit
from ...core.engines.divergence import divergence_by_pose, divergence_finding
from ...core.engines.gltf_audit import (
    ImportedMesh,
    NodeMatch,
    compressed_reason,
    drop_vanished,
    file_divergence,
    importer_changes,
    match_node,
    paired_size,
    place_file_findings,
    target_file_findings,
    unmatched_finding,
    unskinned_finding,
)
from ...core.engines.gltf_path import gltf_engine_positions
from ...core.engines.targets import Target
from ...core.errors import InputError
from ...core.gltf.animation import find_animation
from ...core.gltf.checks import file_checks
from ...core.gltf.document import GltfCompressedError, GltfDocument, load_gltf
from ...core.gltf.skin import skinned_primitives
from ...core.input_guard import GLTF_SUFFIXES
from ..read.weights import group_weights


def scene_fps(scene: bpy.types.Scene) -> float:
    return float(scene.render.fps) / float(scene.render.fps_base)


def clip_document(path: Path) -> GltfDocument | None:
    """The file read by our reader, for the animation audit to play its clips as the target does
    (None when it cannot be read so: compressed data, which the file audit reports)."""
    try:
        return load_gltf(path)
    except GltfCompressedError:
        return None


def imported_match(doc: GltfDocument, obj: bpy.types.Object) -> NodeMatch:
    """Which skinned node of ``doc`` Blender's importer made ``obj`` of, and its rows.

    The pairing reads the rest positions, the group names and the faces only, so the evaluated mesh
    and the weights (``_imported``'s costliest reads) are not read here, and no depsgraph is asked for."""
    node_names = {i: str(n.get("name", "")) for i, n in enumerate(doc.items("nodes"))}
    return match_node(doc, skinned_primitives(doc), _imported(obj, None), node_names)


def play_clip(doc: GltfDocument, clip: str | None) -> None:
    """Give every armature the action Blender's importer made of ``clip`` (named after the animation)."""
    if clip is None:
        return
    index = find_animation(doc, int(clip) if clip.isdigit() else clip)
    if index is None:
        raise InputError(f"the file has no animation {clip!r}")
    name = str(doc.items("animations")[index].get("name") or "")
    action = bpy.data.actions.get(name) if name else None
    if action is None:
        raise InputError(f"Blender's importer made no action named {name!r} for animation {clip!r}; "
                         "audit without --clip, or name the animation in the file")
    for obj in bpy.context.scene.objects:
        if obj.type == "ARMATURE" and obj.animation_data is not None and obj.animation_data.action is not None:
            obj.animation_data.action = action


def _imported(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None) -> ImportedMesh:
    """``obj`` as ``match_node`` and the target comparison read it; without ``depsgraph``: without the
    evaluated mesh (the rest positions in its place) and with empty weights, for the pairing alone."""
    n = len(obj.data.vertices)
    rest = np.zeros(n * 3)
    obj.data.vertices.foreach_get("co", rest)
    names = tuple(g.name for g in obj.vertex_groups)
    if depsgraph is None:
        return ImportedMesh(obj.name, rest.reshape(-1, 3), rest.reshape(-1, 3), names,
                            np.zeros((len(names), 0), dtype=np.float32), _triangles(obj.data))
    ev_obj = obj.evaluated_get(depsgraph)
    ev = ev_obj.to_mesh()
    try:
        co = np.zeros(len(ev.vertices) * 3)
        ev.vertices.foreach_get("co", co)
    finally:
        ev_obj.to_mesh_clear()
    mw = np.array(ev_obj.matrix_world, dtype=np.float64)
    world = co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]
    return ImportedMesh(obj.name, rest.reshape(-1, 3), world, names, group_weights(obj), _triangles(obj.data))


def _triangles(mesh: bpy.types.Mesh) -> np.ndarray:
    """(F, 3) vertex indices of the mesh's triangles (the glTF importer writes only triangles;
    any other polygon, from an edit, gives a face the file's triangles cannot match)."""
    loops = np.zeros(len(mesh.loops), dtype=np.int64)
    mesh.loops.foreach_get("vertex_index", loops)
    totals = np.zeros(len(mesh.polygons), dtype=np.int64)
    mesh.polygons.foreach_get("loop_total", totals)
    starts = np.zeros(len(mesh.polygons), dtype=np.int64)
    mesh.polygons.foreach_get("loop_start", starts)
    tri = starts[totals == 3]
    faces = np.stack([loops[tri], loops[tri + 1], loops[tri + 2]], axis=1) if len(tri) else np.zeros((0, 3), np.int64)
    if (totals != 3).any():  # a polygon the file has no triangle for: never equal to the file's faces
        faces = np.concatenate([faces, np.full((1, 3), -1, dtype=np.int64)])
    return faces


def gltf_audit(path: Path, options: AuditOptions, rigs: tuple[RigAudit, ...], meshes: tuple[MeshAudit, ...]
               ) -> tuple[tuple[RigAudit, ...], tuple[MeshAudit, ...]]:
    """``meshes`` with the file's findings and the target's drawing of the file at the scene's frame.

    For a glTF file the engine draws what the file says, so each mesh's engine divergence is the
    target reading the file (our reader) against Blender's evaluated mesh, at ``current`` only
    (the stress poses are not in the file).  File-wide findings (animation keyframes) go on the
    file's first rig entry.
    """
    target = audit_target(options)
    try:
        doc = load_gltf(path)
    except GltfCompressedError as exc:
        return rigs, tuple(_not_compared(audit, compressed_reason(exc.extensions), target)
                           for audit in meshes)
    scene = bpy.context.scene
    time = scene.frame_current / scene_fps(scene) if doc.items("animations") else None
    engine = gltf_engine_positions(doc, target, options.clip, time)
    prims = skinned_primitives(doc)
    checks = file_checks(doc)
    target_checks = target_file_findings(doc, target, options.clip, time)
    node_names = {i: str(n.get("name", "")) for i, n in enumerate(doc.items("nodes"))}
    depsgraph = bpy.context.evaluated_depsgraph_get()
    out = []
    for audit in meshes:
        obj = scene.objects.get(audit.object)
        if obj is None or obj.type != "MESH":
            out.append(audit)
            continue
        imported = _imported(obj, depsgraph)
        match = match_node(doc, prims, imported, node_names)
        found = place_file_findings(checks, match) + place_file_findings(target_checks, match)
        changes = importer_changes(doc, match, imported, target)
        found += [changes] if changes is not None else []
        kept = [f for f in audit.findings if f.code != "engine-divergence"]
        metrics = dict(audit.metrics)
        measures = dict(audit.measures)
        d = file_divergence(match, engine, imported)
        if d is None:
            found.append(unmatched_finding(imported.object, match.why, target))
            metrics.update(max_engine_divergence=None, engine_divergence_by_pose={})
            measures.pop("engine_divergence", None)
            kept = judge_unnormalised(kept, target, None, 1.0, 0.0, 1.0, from_blend=False)
        else:
            if len(match.unskinned):
                found.append(unskinned_finding(imported.object, match, target))
            d = drop_vanished(d, found)
            # The file's distances are in world units: sized by the file's own rows (the bind pose).
            size = paired_size(match)
            per_pose = {"current": d}
            metrics.update(max_engine_divergence=float(d.max(initial=0.0)),
                           engine_divergence_by_pose=divergence_by_pose(per_pose))  # type: ignore[arg-type]
            measures["engine_divergence"] = d
            finding = divergence_finding(per_pose, max(size, 1.0), options.divergence_relative, target,
                                         "Blender (its glTF importer)", mesh_size=size)
            if finding is not None:
                found.append(replace(finding, message=finding.message + "; Blender shows this file differently "
                                     "from engines", details={**finding.details, "time": time}))
            kept = judge_unnormalised(kept, target, d, size, options.divergence_relative * max(size, 1.0), 1.0,
                                      from_blend=False)
        metrics["gltf_time"] = time
        out.append(replace(audit, findings=tuple(kept + found), metrics=metrics, measures=measures))
    file_wide = [f for f in checks if not str(f.details.get("where", "")).startswith("node ")]
    if file_wide and rigs:
        rigs = (replace(rigs[0], findings=rigs[0].findings + tuple(file_wide)), *rigs[1:])
    elif file_wide and out:
        out[0] = replace(out[0], findings=out[0].findings + tuple(file_wide))
    return rigs, tuple(out)


def _not_compared(audit: MeshAudit, why: str, target: Target) -> MeshAudit:
    """``audit`` of Blender's import alone: its exporter-path engine divergence (a model of
    re-exporting the scene, not of the file) replaced by ``gltf-not-compared`` saying why."""
    kept = judge_unnormalised([f for f in audit.findings if f.code != "engine-divergence"], target, None, 1.0, 0.0,
                              1.0, from_blend=False)
    metrics = {**audit.metrics, "max_engine_divergence": None, "engine_divergence_by_pose": {}}
    measures = {k: v for k, v in audit.measures.items() if k != "engine_divergence"}
    return replace(audit, findings=(*kept, unmatched_finding(audit.object, why, target)), metrics=metrics,
                   measures=measures)


def set_audited_frame(path: Path, options: AuditOptions) -> None:
    """Move the loaded scene to ``options.frame`` (the file is never saved) and, for a glTF
    file, play ``options.clip``; the audit then reads everything at that frame."""
    scene = bpy.context.scene
    if options.clip is not None:
        if path.suffix.lower() not in GLTF_SUFFIXES:
            raise InputError(f"{path}: --clip chooses a glTF animation; this file is not glTF")
        play_clip(load_gltf(path), options.clip)
    if options.frame is not None:
        scene.frame_set(options.frame)
