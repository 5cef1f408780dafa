# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark the audit on a generated rig against Blender's own evaluation.

    .venv/bin/python scripts/benchmark.py [--vertices 1000000] [--bones 32] [--repeat 3]

Builds, in a fresh empty factory scene, a tube of quads (``--point-cloud``:
vertices only) along a chain of bones on +Z, two influences a vertex
(neighbouring bones, ``w`` and ``1 - w`` on a 64-level grid), an Armature
modifier and a bent and twisted pose.  Then times, median of ``--repeat``
runs with ``time.perf_counter``:

1. Blender's evaluation: set one pose bone's rotation, ``depsgraph.update()``,
   and read the evaluated positions with
   ``evaluated_get(dg).data.attributes['position'].data.foreach_get('vector', buf)``
   (before each timed run the pose is moved away and evaluated, untimed, so
   every timed run re-evaluates the armature and the 1M-vertex modifier);
2. weight extraction, ``skin_audit.blender.weights.group_weights``;
3. the Python loop over ``v.groups`` (``group_weights_loop``), once, as the
   reference the extraction replaces (``--skip-loop`` leaves it out);
4. the numpy recomputation, ``skin_audit.core.blender_deform.recompute_blender``
   on the extracted ``SkinnedMesh``;
5. the full audit without file loading,
   ``skin_audit.blender.audit_scene.audit_meshes`` (extraction included).

Prints the machine, a table of seconds and ratios to (1) with the issue's
targets (2 / 10 / 30) and PASS or MISS, and the accuracy of the
recomputation.  A benchmark, not a test: a missed target still exits 0;
only an error exits non-zero.  ``--profile`` adds a cProfile of one full audit.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import math
import os
import platform
import pstats
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Euler  # noqa: E402

from skin_audit.blender.audit_scene import audit_meshes  # noqa: E402
from skin_audit.blender.extract import extract  # noqa: E402
from skin_audit.blender.weights import group_weights, group_weights_loop  # noqa: E402
from skin_audit.core.audit_mesh import audit_skinned_mesh  # noqa: E402
from skin_audit.core.audit_options import AuditOptions  # noqa: E402
from skin_audit.core.blender_deform import recompute_blender  # noqa: E402

#: The issue's targets, as ratios to Blender's own evaluation in the same run.
TARGETS = {"numpy": 2.0, "weights": 10.0, "audit": 30.0}
#: Weight levels: w = (k + 0.5) / LEVELS, exact in float32 and never 0 or 1.
LEVELS = 64
#: Vertices around each ring of the tube.
RING = 64
RADIUS = 0.25
BONE_LENGTH = 1.0


# --- the rig ---------------------------------------------------------------------------------------------

def _tube(vertices: int, bones: int) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) float32 positions of a tube along +Z over the chain, and (F, 4) int32 quads."""
    rings = max(2, vertices // RING)
    z = np.linspace(0.0, bones * BONE_LENGTH, rings)
    angle = np.linspace(0.0, 2.0 * math.pi, RING, endpoint=False)
    co = np.empty((rings, RING, 3), dtype=np.float32)
    co[..., 0] = RADIUS * np.cos(angle)
    co[..., 1] = RADIUS * np.sin(angle)
    co[..., 2] = z[:, None]
    ring = np.arange(RING)
    nxt = (ring + 1) % RING
    start = np.arange(rings - 1)[:, None] * RING
    quads = np.stack([start + ring, start + nxt, start + RING + nxt, start + RING + ring], axis=-1)
    return co.reshape(-1, 3), quads.reshape(-1, 4).astype(np.int32)


def _cloud(vertices: int, bones: int) -> np.ndarray:
    """(V, 3) float32 points on a spiral of radius RADIUS along +Z over the chain."""
    i = np.arange(vertices)
    angle = i * (math.pi * (3.0 - math.sqrt(5.0)))  # golden angle: no two points coincide
    co = np.empty((vertices, 3), dtype=np.float32)
    co[:, 0] = RADIUS * np.cos(angle)
    co[:, 1] = RADIUS * np.sin(angle)
    co[:, 2] = np.linspace(0.0, bones * BONE_LENGTH, vertices)
    return co


def _build_mesh(co: np.ndarray, quads: np.ndarray | None) -> bpy.types.Mesh:
    me = bpy.data.meshes.new("Bench")
    me.vertices.add(len(co))
    me.vertices.foreach_set("co", co.ravel())
    if quads is not None and len(quads):
        me.loops.add(quads.size)
        me.loops.foreach_set("vertex_index", quads.ravel())
        me.polygons.add(len(quads))
        me.polygons.foreach_set("loop_start", np.arange(0, quads.size, 4, dtype=np.int32))
        me.update(calc_edges=True)
    else:
        me.update()
    me.validate(verbose=False)
    return me


def _build_armature(scene: bpy.types.Scene, bones: int) -> bpy.types.Object:
    data = bpy.data.armatures.new("BenchRig")
    arm = bpy.data.objects.new("BenchRig", data)
    scene.collection.objects.link(arm)
    view_layer = bpy.context.view_layer
    view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        parent = None
        for j in range(bones):
            eb = data.edit_bones.new(f"B{j:02d}")
            eb.head, eb.tail, eb.roll = (0.0, 0.0, j * BONE_LENGTH), (0.0, 0.0, (j + 1) * BONE_LENGTH), 0.0
            if parent is not None:
                eb.parent = parent
                eb.use_connect = True
            parent = eb
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def _assign_weights(obj: bpy.types.Object, co: np.ndarray, bones: int) -> int:
    """Two influences a vertex: the bones whose centres bracket it, ``1 - q`` and ``q``.

    One ``vg.add`` per (group, distinct weight); returns the number of calls.
    """
    groups = [obj.vertex_groups.new(name=f"B{j:02d}") for j in range(bones)]
    s = co[:, 2].astype(np.float64) / BONE_LENGTH - 0.5  # in bone-centre units
    lower = np.clip(np.floor(s), 0, bones - 2).astype(np.intp)
    t = np.clip(s - lower, 0.0, 1.0)
    level = np.minimum(np.floor(t * LEVELS), LEVELS - 1).astype(np.intp)
    key = lower * LEVELS + level
    order = np.argsort(key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    calls = 0
    for chunk in np.split(order, cuts):
        b, k = divmod(int(key[chunk[0]]), LEVELS)
        q = (k + 0.5) / LEVELS
        members = chunk.tolist()
        groups[b].add(members, 1.0 - q, "REPLACE")
        groups[b + 1].add(members, q, "REPLACE")
        calls += 2
    return calls


def _pose(arm: bpy.types.Object) -> None:
    """Every bone bent about X and Z and twisted about its Y, by a few degrees that vary along the chain."""
    for j, pb in enumerate(arm.pose.bones):
        pb.rotation_mode = "QUATERNION"
        angles = (math.radians(10.0 * math.sin(0.7 * j + 0.3)), math.radians(6.0),
                  math.radians(8.0 * math.cos(0.5 * j)))
        pb.rotation_quaternion = Euler(angles, "XYZ").to_quaternion()


def build_rig(vertices: int, bones: int, faces: bool) -> tuple[bpy.types.Object, bpy.types.Object, int]:
    """A fresh empty scene holding the benchmark rig; returns (mesh object, armature, vg.add calls)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    arm = _build_armature(scene, bones)
    if faces:
        co, quads = _tube(vertices, bones)
    else:
        co, quads = _cloud(vertices, bones), None
    obj = bpy.data.objects.new("Bench", _build_mesh(co, quads))
    scene.collection.objects.link(obj)
    calls = _assign_weights(obj, co, bones)
    obj.parent = arm
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    mod.use_vertex_groups = True
    mod.use_bone_envelopes = False
    _pose(arm)
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, arm, calls


# --- timing ----------------------------------------------------------------------------------------------

def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # ru_maxrss is KiB on Linux


def _median_time(
    run: Callable[[], Any], repeat: int, before: Callable[[], None] | None = None
) -> tuple[float, Any]:
    """Median seconds of ``repeat`` calls of ``run`` (``before`` runs untimed ahead of each); last result."""
    times = []
    result = None
    for _ in range(repeat):
        if before is not None:
            before()
        gc.collect()
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def blender_evaluation(obj: bpy.types.Object, arm: bpy.types.Object, repeat: int) -> tuple[float, np.ndarray]:
    """Median seconds of a pose change, ``dg.update()`` and reading the evaluated positions.

    Returns the seconds and Blender's (V, 3) float32 positions at the benchmark pose.
    """
    dg = bpy.context.evaluated_depsgraph_get()
    bone = arm.pose.bones[0]
    posed = bone.rotation_quaternion.copy()
    away = (Euler((0.3, 0.0, 0.0), "XYZ").to_quaternion() @ posed)
    buf = np.empty(len(obj.data.vertices) * 3, dtype=np.float32)

    def move_away() -> None:
        bone.rotation_quaternion = away
        dg.update()

    def evaluate() -> np.ndarray:
        bone.rotation_quaternion = posed
        dg.update()
        obj.evaluated_get(dg).data.attributes["position"].data.foreach_get("vector", buf)
        return buf

    seconds, out = _median_time(evaluate, repeat, before=move_away)
    return seconds, out.reshape(-1, 3).copy()


def profile_audit(obj: bpy.types.Object, top: int) -> str:
    """cProfile of one full audit: skin_audit functions by cumulative time, then everything by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    audit_meshes(bpy.context, [obj], AuditOptions())
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    out.write("-- skin_audit functions, by cumulative time\n")
    stats.sort_stats("cumulative").print_stats(r"skin_audit|benchmark", top)
    out.write("-- everything, by own time\n")
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


# --- report ----------------------------------------------------------------------------------------------

def _row(label: str, seconds: float | None, base: float, target: float | None = None) -> str:
    if seconds is None:
        return f"{label:<46} {'skipped':>9}"
    ratio = seconds / base if base > 0 else math.inf
    line = f"{label:<46} {seconds:9.3f} {ratio:9.1f}x"
    if target is not None:
        line += f"   <= {target:>4g}x  {'PASS' if ratio <= target else 'MISS'}"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vertices", type=int, default=1_000_000, help="mesh vertices (default 1000000)")
    parser.add_argument("--bones", type=int, default=32, help="bones in the chain, at least 2 (default 32)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per step; the median is shown")
    parser.add_argument("--skip-loop", action="store_true", help="leave out the per-vertex v.groups loop")
    parser.add_argument("--point-cloud", action="store_true", help="vertices only, no faces or edges")
    parser.add_argument("--profile", type=int, nargs="?", const=30, default=0, metavar="LINES",
                        help="also cProfile one full audit and print the top LINES entries (default 30)")
    args = parser.parse_args(argv)
    if args.bones < 2 or args.vertices < 2 * RING or args.repeat < 1:
        parser.error("need --bones >= 2, --vertices >= 128 and --repeat >= 1")

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine: {platform.machine()} {platform.system()}, {cores} cores available "
          f"({os.cpu_count()} logical), Python {platform.python_version()}, numpy {np.__version__}, "
          f"Blender (bpy) {bpy.app.version_string}")

    start = time.perf_counter()
    obj, arm, calls = build_rig(args.vertices, args.bones, not args.point_cloud)
    me = obj.data
    print(f"rig: {len(me.vertices)} vertices, {len(me.edges)} edges, {len(me.polygons)} faces, "
          f"{len(arm.data.bones)} bones, 2 influences a vertex ({LEVELS} weight levels, "
          f"{calls} vg.add calls); "
          f"built in {time.perf_counter() - start:.2f} s")
    print(f"repeat: median of {args.repeat} runs (the v.groups loop: one run)\n")

    # 1. Blender's own evaluation.
    t_blender, blender_out = blender_evaluation(obj, arm, args.repeat)
    rest = np.empty(len(me.vertices) * 3, dtype=np.float32)
    me.vertices.foreach_get("co", rest)
    moved = float(np.linalg.norm(blender_out - rest.reshape(-1, 3), axis=1).max())

    # 2. Weight extraction.
    t_weights, weights = _median_time(lambda: group_weights(obj), args.repeat)

    # 3. The per-vertex loop, for the reference ratio.
    t_loop = None
    if not args.skip_loop:
        t_loop, looped = _median_time(lambda: group_weights_loop(me, len(obj.vertex_groups)), 1)
        if not np.array_equal(looped, weights):
            raise RuntimeError("group_weights and group_weights_loop disagree on the benchmark rig")
        del looped

    # 4. numpy recomputation on the extracted mesh.
    mod = obj.modifiers["Armature"]
    dg = bpy.context.evaluated_depsgraph_get()
    t_extract, skinned = _median_time(lambda: extract(obj, mod, dg), args.repeat)
    t_numpy, rec = _median_time(lambda: recompute_blender(skinned), args.repeat)

    # 5. The full audit, and its core half alone.
    t_core, _ = _median_time(lambda: audit_skinned_mesh(skinned, AuditOptions()), args.repeat)
    t_audit, audits = _median_time(lambda: audit_meshes(bpy.context, [obj], AuditOptions()), args.repeat)

    base = t_blender
    print(f"{'step':<46} {'seconds':>9} {'/ Blender':>10}   target  result")
    print(_row("1 Blender evaluation (pose, update, read)", t_blender, base))
    print(_row("2 weight extraction (group_weights)", t_weights, base, TARGETS["weights"]))
    print(_row("3 v.groups loop (group_weights_loop, 1 run)", t_loop, base))
    print(_row("4 numpy recomputation (recompute_blender)", t_numpy, base, TARGETS["numpy"]))
    print(_row("5 full audit (audit_meshes)", t_audit, base, TARGETS["audit"]))
    print(_row("  of which extract()", t_extract, base))
    print(_row("  of which audit_skinned_mesh()", t_core, base))

    diff = np.linalg.norm(rec.positions - blender_out.astype(np.float64), axis=1)
    size = skinned.size()
    metric = audits[0].metrics.get("max_numpy_vs_blender")
    print(f"\naccuracy: max |numpy - Blender| = {diff.max():.3g} over {len(diff)} vertices "
          f"({diff.max() / size:.3g} of the mesh size {size:.3g}); the audit's own max_numpy_vs_blender = "
          f"{metric if metric is None else f'{metric:.3g}'}; the pose moves vertices up to {moved:.3g}")
    print(f"findings: {', '.join(f.code for f in audits[0].findings) or 'none'}")
    print(f"peak RSS: {_peak_rss_gb():.2f} GB")

    if args.profile:
        print("\n" + profile_audit(obj, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
