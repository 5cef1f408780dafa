# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit of one armature: every frame of every action, Blender posing the rig on
a sandbox copy, numpy measuring every mesh it deforms (``core/audit/animation``), Blender's
evaluated mesh spot-checked at a few frames, and the keys checked (``core/audit/animation_data``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...core.audit.animation import ActionMeasures, action_findings
from ...core.audit.animation_data import animation_data_findings
from ...core.audit.armature_modifier import recompute_blender
from ...core.audit.engine_target import audit_target, prepare_target
from ...core.audit.options import AuditOptions
from ...core.audit.skinned_mesh import SkinnedMesh
from ...core.engines.gltf_audit import NodeMatch
from ...core.engines.gltf_clip import ClipDrawing, clip_drawing, clip_file, prepare_primitives
from ...core.engines.targets import Target
from ...core.findings import Finding
from ...core.gltf.document import GltfDocument
from ..read.animation import ActionPlayer, action_frames, armature_actions, read_action_data
from ..sandbox import sandbox
from .gltf_file import imported_match, scene_fps

#: Frames of an action whose Blender mesh is compared with numpy: its first, its worst, its last.
SPOT_FRAMES = 3


@dataclass
class AnimationResult:
    rig_findings: list[Finding] = field(default_factory=list)
    #: Per mesh (in the order given): its findings.
    mesh_findings: list[list[Finding]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def audit_animation(armature: str, parts: Sequence[tuple[bpy.types.Object, bpy.types.ArmatureModifier, SkinnedMesh]],
                    options: AuditOptions, gltf: GltfDocument | None = None) -> AnimationResult:
    """Play every action of ``armature`` (or those ``options.animation`` names) over the meshes of ``parts``;
    ``gltf``: the document the scene was imported from, whose clips the target plays beside Blender's actions."""
    result = AnimationResult(mesh_findings=[[] for _ in parts])
    arm = bpy.data.objects[armature]
    names = options.animation or ()
    actions = armature_actions(arm, names)
    result.data = {"actions": [], "requested": list(names),
                   "missing": sorted(set(names) - {a.name for a in actions})}
    if not parts or not actions:
        return result
    meshes = [m for _, _, m in parts]
    bones = meshes[0].bones
    target = audit_target(options)
    prepared = [prepare_target(m, target) for m in meshes]
    clips = _clip_models(gltf, parts, target)
    tables = [None] * len(meshes)
    data = []
    blender_seconds = numpy_seconds = 0.0
    frames_total = 0
    with sandbox() as box:
        player = ActionPlayer(box, arm, bones.names)
        for obj, mod, _ in parts:
            player.spot_copy(obj, mod)
        for action in actions:
            frames = action_frames(action, options.animation_step, options.animation_frames)
            data.append(read_action_data(action, arm, frames))
            measures = [ActionMeasures(m, action.name, target, table=table, clip=clip(action.name),
                                       world=np.array(obj.matrix_world, dtype=np.float64))
                        for m, table, clip, (obj, _, _) in zip(meshes, tables, clips, parts, strict=True)]
            clock = time.perf_counter()
            for batch, channels in player.play(action, frames):
                now = time.perf_counter()
                blender_seconds += now - clock
                for m, prep in zip(measures, prepared, strict=True):
                    m.add(batch, channels, prep)
                clock = time.perf_counter()
                numpy_seconds += clock - now
            frames_total += len(frames)
            tables = [m.table for m in measures]  # one per mesh serves every action
            for k, ((obj, mod, mesh), m) in enumerate(zip(parts, measures, strict=True)):
                _spot_check(player, (obj.name, mod.name), mesh, m, frames)
                found, entry = action_findings(m, options)
                result.mesh_findings[k] += found
                result.data["actions"].append(entry)
    result.rig_findings = animation_data_findings(armature, bones, data)
    result.data.update({"frames": frames_total, "blender_seconds": blender_seconds, "numpy_seconds": numpy_seconds})
    return result


def _clip_models(gltf: GltfDocument | None, parts: Sequence[tuple[bpy.types.Object, bpy.types.ArmatureModifier,
                                                                    SkinnedMesh]],
                 target: Target) -> list[Callable[[str], ClipDrawing | None]]:
    """Per mesh: the target playing the file's animation named as an action (Blender's importer names
    each action after its animation), or None (not a glTF file, no such animation, rows not matched)."""
    def none(_: str) -> ClipDrawing | None:
        return None

    if gltf is None or not gltf.items("animations"):
        return [none] * len(parts)
    fps = scene_fps(bpy.context.scene)
    # The importer names an unnamed animation "Anim_<index>".
    index = {str(a.get("name") or f"Anim_{k}"): k for k, a in enumerate(gltf.items("animations"))}
    shared = clip_file(gltf)  # the nodes' rest and each animation's samplers, read once for every mesh
    out = []
    for obj, _, _ in parts:
        match = imported_match(gltf, obj)
        primitives = prepare_primitives(gltf, target, match)

        def model(action: str, match: NodeMatch = match, primitives: Any = primitives) -> ClipDrawing | None:
            anim = index.get(action)
            return None if anim is None else clip_drawing(gltf, target, anim, fps, match, primitives, shared)

        out.append(model)
    return out


def _spot_check(player: ActionPlayer, key: tuple[str, str], mesh: SkinnedMesh, m: ActionMeasures,
                frames: Sequence[float]) -> None:
    """Blender's evaluated mesh against numpy's at the action's first, worst and last frames."""
    if not frames or mesh.vertex_count == 0:
        return
    worst = m.worst_frames(m.sigma_min, lowest=True)[:1] or m.worst_frames(m.divergence_max, lowest=False)[:1]
    chosen = list(dict.fromkeys([frames[0], *worst, frames[-1]]))[:SPOT_FRAMES]
    size = mesh.size()
    for frame in chosen:
        stored, channel = player.at_frame(key, frame)
        blender = stored.astype(np.float64)
        numpy_positions = recompute_blender(mesh, mesh.read_pose.at(channel)).positions
        with np.errstate(invalid="ignore"):
            d = float(np.sqrt(((blender - numpy_positions) ** 2).sum(axis=1)).max()) / size
        m.spot_checks.append((float(frame), d if np.isfinite(d) else float("inf")))
