# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark the audit on a generated rig against Blender's own evaluation.

    .venv/bin/python scripts/benchmark.py [--vertices 1000000] [--bones 32] [--repeat 3]

Builds, in a fresh empty factory scene, a tube of quads (whole rings of 64
vertices; ``--point-cloud``: vertices only) along a chain of bones on +Z,
two influences a vertex (neighbouring bones, ``w`` and ``1 - w`` on a
64-level grid), an Armature modifier and a bent and twisted pose.
``--mirror`` builds two mirrored chains (.L and .R, half the bones and
vertices each) so the audit's symmetry checks run as on a character.  Then
times, median of ``--repeat`` runs with ``time.perf_counter``:

1. Blender's evaluation: set one pose bone's rotation, ``depsgraph.update()``,
   and read the evaluated positions with
   ``evaluated_get(dg).data.attributes['position'].data.foreach_get('vector', buf)``
   (before each timed run the pose is moved away and evaluated, untimed, so
   every timed run re-evaluates the armature and the mesh's Armature modifier);
2. weight extraction, ``skin_audit.blender.read.weights.group_weights``;
3. the Python loop over ``v.groups`` (``group_weights_loop``), once, as the
   reference the extraction replaces (``--skip-loop`` leaves it out);
4. the numpy recomputation, ``skin_audit.core.audit.armature_modifier.recompute_blender``
   on a fresh copy of the extracted ``SkinnedMesh`` each run (so its per-mesh
   caches are built inside the timing);
5. the full audit without file loading,
   ``skin_audit.blender.run.audit_scene.audit_meshes``: extraction included, and
   timed apart (by wrapping ``audit_scene.extract`` during these runs);
6. the same audit with ``AuditOptions(shape_checks=False)`` (``--no-shape-checks``).

Prints the machine, a table of seconds and ratios to (1) with the issue's
targets (2 / 10 / 30) and PASS or MISS, and the accuracy of the
recomputation.  A benchmark, not a test: a missed target still exits 0;
only an error exits non-zero.  ``--profile`` adds a cProfile of one full audit.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Euler  # noqa: E402

from skin_audit.blender.build.objects import BoneSpec, add_weights, build_armature, mesh_from_arrays  # noqa: E402
from skin_audit.blender.read.extract import extract  # noqa: E402
from skin_audit.blender.read.weights import group_weights, group_weights_loop  # noqa: E402
from skin_audit.blender.run import audit_scene  # noqa: E402
from skin_audit.blender.run.audit_scene import audit_meshes  # noqa: E402
from skin_audit.core.audit.armature_modifier import recompute_blender  # noqa: E402
from skin_audit.core.audit.options import AuditOptions  # noqa: E402

#: The issue's targets, as ratios to Blender's own evaluation in the same run.
TARGETS = {"numpy": 2.0, "weights": 10.0, "audit": 30.0}
#: Weight levels: w = (k + 0.5) / LEVELS, exact in float32 and never 0 or 1.
LEVELS = 64
#: Vertices around each ring of the tube.
RING = 64
RADIUS = 0.25
BONE_LENGTH = 1.0
#: With --mirror, the .L chain stands at x = +MIRROR_OFFSET and the .R chain at x = -MIRROR_OFFSET.
MIRROR_OFFSET = 0.5


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


def _chains(mirror: bool) -> list[tuple[str, float]]:
    """(name suffix, x of the chain) per chain: one on the Z axis, or a .L/.R pair mirrored across x = 0."""
    return [(".L", MIRROR_OFFSET), (".R", -MIRROR_OFFSET)] if mirror else [("", 0.0)]


def _bones(chains: list[tuple[str, float]], length: int) -> list[BoneSpec]:
    """Each chain straight up Z from its x, bones connected."""
    out = []
    for suffix, x in chains:
        for j in range(length):
            out.append(BoneSpec(f"B{j:02d}{suffix}", (x, 0.0, j * BONE_LENGTH), (x, 0.0, (j + 1) * BONE_LENGTH),
                                parent=f"B{j - 1:02d}{suffix}" if j else None, use_connect=bool(j)))
    return out


def _weights(z: np.ndarray, first: int, names: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Two influences a vertex: the chain's bones whose centres bracket it, ``1 - q`` and ``q``.

    ``z`` holds the heights of vertices ``first, first + 1, ...``; ``q`` is quantised to
    LEVELS values so the groups are filled with few ``vg.add`` calls.
    """
    s = z.astype(np.float64) / BONE_LENGTH - 0.5  # in bone-centre units
    lower = np.clip(np.floor(s), 0, len(names) - 2).astype(np.intp)
    t = np.clip(s - lower, 0.0, 1.0)
    q = (np.minimum(np.floor(t * LEVELS), LEVELS - 1) + 0.5) / LEVELS
    index = np.arange(len(z)) + first
    out = {}
    for b, name in enumerate(names):
        low, high = lower == b, lower + 1 == b
        out[name] = (np.concatenate([index[low], index[high]]), np.concatenate([1.0 - q[low], q[high]]))
    return out


def _pose(arm: bpy.types.Object) -> None:
    """Every bone bent about X and Z and twisted about its Y by a few degrees varying along its chain.

    The .R chain gets the mirror image of the .L chain's pose.
    """
    for pb in arm.pose.bones:
        j = int(pb.name[1:3])
        sign = -1.0 if pb.name.endswith(".R") else 1.0
        pb.rotation_mode = "QUATERNION"
        angles = (math.radians(10.0 * math.sin(0.7 * j + 0.3)), sign * math.radians(6.0),
                  sign * math.radians(8.0 * math.cos(0.5 * j)))
        pb.rotation_quaternion = Euler(angles, "XYZ").to_quaternion()


def build_rig(
    vertices: int, bones: int, faces: bool = True, mirror: bool = False
) -> tuple[bpy.types.Object, bpy.types.Object, int]:
    """A fresh empty scene holding the benchmark rig; returns (mesh object, armature, vg.add calls).

    ``mirror`` splits the bones and vertices into two chains, .L and .R, mirror
    images across x = 0, so the audit's symmetry checks run too.
    """
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    chains = _chains(mirror)
    length, per_chain = bones // len(chains), vertices // len(chains)
    arm = build_armature("BenchRig", _bones(chains, length), scene.collection, bpy.context.view_layer)
    if faces:
        co, quads = _tube(per_chain, length)
    else:
        co, quads = _cloud(per_chain, length), None
    parts, faces_parts = [], []
    for c, (_, x) in enumerate(chains):
        part = co.copy()
        part[:, 0] = co[:, 0] + abs(x)
        if x < 0.0:
            part[:, 0] *= -1.0  # the exact mirror image of the .L part
        parts.append(part)
        if quads is not None:
            faces_parts.append(quads + c * len(co))
    obj = bpy.data.objects.new("Bench", mesh_from_arrays("Bench", np.concatenate(parts),
                                                         np.concatenate(faces_parts) if faces_parts else ()))
    scene.collection.objects.link(obj)
    calls = 0
    for c, (suffix, _) in enumerate(chains):
        spec = _weights(co[:, 2], c * len(co), [f"B{j:02d}{suffix}" for j in range(length)])
        add_weights(obj, spec)
        calls += sum(len(np.unique(w)) for _, w in spec.values())
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


def full_audit(obj: bpy.types.Object, repeat: int, options: AuditOptions | None = None
               ) -> tuple[float, float, float, tuple[Any, ...]]:
    """Medians of the full audit, of the extraction inside it and of the rest; the last audit.

    The extraction is timed by wrapping ``audit_scene.extract`` for these runs only.
    """
    inner: list[float] = []

    def timed_extract(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return extract(*args, **kwargs)
        finally:
            inner.append(time.perf_counter() - start)

    totals, extracts, audits = [], [], ()
    audit_scene.extract = timed_extract
    try:
        for _ in range(repeat):
            inner.clear()
            gc.collect()
            start = time.perf_counter()
            audits = audit_meshes(bpy.context, [obj], options or AuditOptions())
            totals.append(time.perf_counter() - start)
            extracts.append(sum(inner))
    finally:
        audit_scene.extract = extract
    checks = [t - e for t, e in zip(totals, extracts, strict=True)]
    return statistics.median(totals), statistics.median(extracts), statistics.median(checks), audits


def profile_audit(obj: bpy.types.Object, top: int) -> str:
    """cProfile of one full audit: skin_audit functions by cumulative time, then everything by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    audit_meshes(bpy.context, [obj], AuditOptions())
    profiler.disable()
    # (file, line, function) -> (primitive calls, calls, own seconds, cumulative seconds, callers)
    stats = pstats.Stats(profiler).stats
    total = sum(own for _, _, own, _, _ in stats.values())

    def lines(keys: list[tuple[str, int, str]]) -> list[str]:
        out = [f"{'calls':>7} {'own s':>8} {'cum s':>8}  function"]
        for key in keys[:top]:
            _, calls, own, cum, _ = stats[key]
            file, line, name = key
            shown = os.path.relpath(file, ROOT) if file.startswith(ROOT) else os.path.basename(file)
            where = f"{shown}:{line}"
            out.append(f"{calls:>7} {own:8.3f} {cum:8.3f}  {name} ({where})" if line else
                       f"{calls:>7} {own:8.3f} {cum:8.3f}  {name}")
        return out

    ours = sorted((k for k in stats if k[0].startswith(os.path.join(ROOT, "skin_audit"))),
                  key=lambda k: -stats[k][3])
    everything = sorted(stats, key=lambda k: -stats[k][2])
    return "\n".join([f"profile of one full audit ({total:.3f} s of own time)",
                      "-- skin_audit functions, by cumulative time", *lines(ours),
                      "-- everything, by own time", *lines(everything)])


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
    parser.add_argument("--mirror", action="store_true",
                        help="two mirrored chains (.L/.R) of bones/2 bones each, so the symmetry checks run")
    parser.add_argument("--profile", type=int, nargs="?", const=30, default=0, metavar="LINES",
                        help="also cProfile one full audit and print the top LINES entries (default 30)")
    args = parser.parse_args(argv)
    chains = 2 if args.mirror else 1
    if args.bones < 2 * chains or args.vertices < 2 * RING * chains or args.repeat < 1:
        parser.error(f"need --bones >= {2 * chains}, --vertices >= {2 * RING * chains} and --repeat >= 1")

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine: {platform.machine()} {platform.system()}, {cores} cores available "
          f"({os.cpu_count()} logical), Python {platform.python_version()}, numpy {np.__version__}, "
          f"Blender (bpy) {bpy.app.version_string}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")

    start = time.perf_counter()
    obj, arm, calls = build_rig(args.vertices, args.bones, not args.point_cloud, args.mirror)
    me = obj.data
    print(f"rig: {len(me.vertices)} vertices, {len(me.edges)} edges, {len(me.polygons)} faces, "
          f"{len(arm.data.bones)} bones in {chains} chain{'s' if chains > 1 else ''}, 2 influences a vertex "
          f"({LEVELS} weight levels, {calls} vg.add calls); built in {time.perf_counter() - start:.2f} s")
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

    # 4. numpy recomputation on the extracted mesh; a fresh copy each run, so the per-mesh
    #    caches (weight columns, armature-space positions) are built inside the timing.
    skinned = extract(obj, obj.modifiers["Armature"], bpy.context.evaluated_depsgraph_get())
    t_numpy, rec = _median_time(lambda: recompute_blender(dataclasses.replace(skinned)), args.repeat)

    # 5. The full audit, with the extraction inside it timed apart; then the same without the
    #    shape checks (extreme-pose sweep, symmetry, stray weights: --no-shape-checks).
    t_audit, t_extract, t_checks, audits = full_audit(obj, args.repeat)
    t_core, _, _, _ = full_audit(obj, args.repeat, AuditOptions(shape_checks=False))

    base = t_blender
    print(f"{'step':<46} {'seconds':>9} {'/ Blender':>10}   target  result")
    print(_row("1 Blender evaluation (pose, update, read)", t_blender, base))
    print(_row("2 weight extraction (group_weights)", t_weights, base, TARGETS["weights"]))
    print(_row("3 v.groups loop (group_weights_loop, 1 run)", t_loop, base))
    print(_row("4 numpy recomputation (recompute_blender)", t_numpy, base, TARGETS["numpy"]))
    print(_row("5 full audit (audit_meshes)", t_audit, base, TARGETS["audit"]))
    print(_row("  of which extraction (extract)", t_extract, base))
    print(_row("  of which the checks after extraction", t_checks, base))
    print(_row("6 audit, shape_checks=False", t_core, base, TARGETS["audit"]))

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
