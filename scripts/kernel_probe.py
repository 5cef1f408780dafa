# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure a compiled C kernel for the linear-blend recomputation beside numpy's and Blender's.

    .venv/bin/python scripts/kernel_probe.py [--mesh PICKLE] [--vertices 1000000] [--bones 32] [--repeat 3]

A measurement ("if a compiled kernel is the only way to reach <= 1x, measure it
first"), not part of the package: the runtime dependency stays numpy.  It writes a small C
kernel to a temporary directory, compiles it twice with ``gcc -O3 -march=native
-fno-trapping-math`` (``FLAGS``; once with
``-fopenmp``, once without: one thread), loads both with ctypes and times, median of
``--repeat`` runs, on the same mesh in the same process:

* numpy, ``recompute_blender``: one pose on a fresh copy of the ``SkinnedMesh`` (nothing
  cached: the dense product over blocks of the (G, V) float32 weights, ``core/maths/dense_blend``,
  where the mesh allows), a first pose building the blend layout (``build_layout=True``, as
  the audit), then another pose each run on one copy whose layout is kept (every deform bone
  bent by 20, 21, ... degrees, ``standard_poses``, as ``scripts/benchmark.py`` step 4b);
* C, first pose: one pass over tiles of vertices reading every deform group's row of the dense
  weights (a tile whose row is all zero is skipped after a vectorised zero test), summing
  ``w`` and ``w (D_b p)`` per vertex in group order (Blender's order), ``D_b`` the object-space
  displacement ``P^-1 M_b P - I``, then ``p + a / sum w * sum`` (0 when ``sum w <= 1e-4``);
  the same pass writes a vertex-major slot table (bone, float32 weight per slot, the
  per-vertex scale and count) for later poses;
* C, another pose: one pass over vertices reading that table.

Every C result is checked against numpy's at the same pose (max |C - numpy| over the mesh
size), and a breakdown shows where the C time goes: a bare read of every weight row (the
memory floor of a first pose), the blend with and without the table, into a fresh or a reused
output.

Without ``--mesh`` it builds the benchmark rig in bpy (``scripts/benchmark.py::build_rig``),
times Blender's own evaluation of it (``benchmark.blender_evaluation``, step 1) and prints
every time as a ratio to it.  ``--mesh`` loads a pickled ``SkinnedMesh`` instead (no bpy;
``--blender-seconds`` gives a baseline measured elsewhere).  A mesh with B-Bones is measured
on its plain path: its B-Bones read as plain bones (``Bones.bbones`` emptied) for numpy and C
alike, numpy with its B-Bones timed beside for reference.  Needs gcc; Linux.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import gc
import os
import pickle
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, TypeVar

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from skin_audit.core import tolerances  # noqa: E402
from skin_audit.core.audit.armature_modifier import has_bbones, recompute_blender  # noqa: E402
from skin_audit.core.audit.skinned_mesh import SkinnedMesh  # noqa: E402
from skin_audit.core.audit.stress_poses import standard_poses  # noqa: E402
from skin_audit.core.heap import keep_freed_memory  # noqa: E402

F64 = NDArray[np.float64]
T = TypeVar("T")

#: Vertices per tile of the first-pose pass: its accumulators (7 doubles a vertex) stay in L1/L2
#: while every group's row segment of the tile streams through.
TILE = 1024
#: Slots per vertex the first pass writes before it knows the most influences any vertex has;
#: a mesh with more runs the pass again with that many.
FIRST_SLOTS = 4
#: Largest |C - numpy| accepted, as a fraction of the mesh size (both float64, same sums in another
#: order): the script exits 1 above it.
AGREEMENT = 1e-12
#: Compiler flags of both builds (the OpenMP one adds -fopenmp).
FLAGS = ("-O3", "-march=native", "-fno-trapping-math")

KERNEL_C = r"""
#include <stdint.h>

#ifndef TILE
#define TILE 1024
#endif

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Read every deform group's row once, as the first pass does (tile by tile, the zero test
   only): the memory floor of a first pose from the dense weights.  Returns the tiles with a
   non-zero weight. */
int64_t scan_dense(const float *weights, int64_t groups, int64_t vertices, const int32_t *group_bone)
{
    int64_t used = 0;
    const int64_t tiles = (vertices + TILE - 1) / TILE;
    #pragma omp parallel for schedule(static) reduction(+:used)
    for (int64_t t = 0; t < tiles; t++) {
        const int64_t v0 = t * TILE, n = min64(TILE, vertices - v0);
        for (int64_t g = 0; g < groups; g++) {
            if (group_bone[g] < 0) continue;
            const uint32_t *bits = (const uint32_t *)(weights + g * vertices + v0);
            uint32_t any = 0;
            for (int64_t i = 0; i < n; i++) any |= bits[i] & 0x7fffffffu;
            used += any != 0;
        }
    }
    return used;
}

/* First pose from the dense (groups, vertices) float32 weights.  disp: (bones, 3, 4) object-space
   displacements P^-1 M P - I; rest, out: (vertices, 3); mask: (vertices,) or NULL for 1.
   With slot_bone non-NULL also writes the slot table: (vertices, slots) bones and weights in
   group order, (vertices,) scale a / sum w and count.  Returns the most influences a vertex has
   (the table is complete only if that is <= slots). */
int32_t blend_dense(const float *weights, int64_t groups, int64_t vertices, const int32_t *group_bone,
                    const double *disp, const double *rest, const double *mask, double min_contrib,
                    double *out, int32_t slots, int32_t *slot_bone, float *slot_weight,
                    double *scale, int32_t *count)
{
    int32_t most = 0;
    const int64_t tiles = (vertices + TILE - 1) / TILE;
    #pragma omp parallel for schedule(static) reduction(max:most)
    for (int64_t t = 0; t < tiles; t++) {
        const int64_t v0 = t * TILE, n = min64(TILE, vertices - v0);
        double px[TILE], py[TILE], pz[TILE], sw[TILE], dx[TILE], dy[TILE], dz[TILE];
        int32_t c[TILE];
        for (int64_t i = 0; i < n; i++) {
            px[i] = rest[3 * (v0 + i)];
            py[i] = rest[3 * (v0 + i) + 1];
            pz[i] = rest[3 * (v0 + i) + 2];
            sw[i] = dx[i] = dy[i] = dz[i] = 0.0;
            c[i] = 0;
        }
        for (int64_t g = 0; g < groups; g++) {
            const int32_t b = group_bone[g];
            if (b < 0) continue;
            const float *row = weights + g * vertices + v0;
            const uint32_t *bits = (const uint32_t *)row;
            uint32_t any = 0;  /* +-0 has no bit but the sign; NaN is used, as in numpy */
            for (int64_t i = 0; i < n; i++) any |= bits[i] & 0x7fffffffu;
            if (!any) continue;
            const double *m = disp + 12 * (int64_t)b;
            const double m0 = m[0], m1 = m[1], m2 = m[2], m3 = m[3], m4 = m[4], m5 = m[5];
            const double m6 = m[6], m7 = m[7], m8 = m[8], m9 = m[9], m10 = m[10], m11 = m[11];
            for (int64_t i = 0; i < n; i++) {
                const double w = row[i];
                const int on = w != 0.0;
                /* computed for every weight, then selected (gcc vectorises a select, not a
                   conditional product): a zero weight adds nothing, even where a displacement
                   is not finite */
                const double ex = w * (m0 * px[i] + m1 * py[i] + m2 * pz[i] + m3);
                const double ey = w * (m4 * px[i] + m5 * py[i] + m6 * pz[i] + m7);
                const double ez = w * (m8 * px[i] + m9 * py[i] + m10 * pz[i] + m11);
                sw[i] += w;  /* +-0 leaves a sum as it is */
                dx[i] += on ? ex : 0.0;
                dy[i] += on ? ey : 0.0;
                dz[i] += on ? ez : 0.0;
                c[i] += on;
            }
            if (slot_bone) {
                for (int64_t i = 0; i < n; i++) {
                    if (row[i] != 0.0f && c[i] <= slots) {
                        const int64_t at = (v0 + i) * slots + c[i] - 1;
                        slot_bone[at] = b;
                        slot_weight[at] = row[i];
                    }
                }
            }
        }
        for (int64_t i = 0; i < n; i++) {
            const int64_t v = v0 + i;
            const double a = mask ? mask[v] : 1.0;
            const double s = sw[i] > min_contrib ? a / sw[i] : 0.0;
            out[3 * v] = px[i] + s * dx[i];
            out[3 * v + 1] = py[i] + s * dy[i];
            out[3 * v + 2] = pz[i] + s * dz[i];
            if (slot_bone) {
                scale[v] = s;
                count[v] = c[i];
            }
            if (c[i] > most) most = c[i];
        }
    }
    return most;
}

/* Another pose from the slot table (count[v] <= slots everywhere), same sums in the same order. */
void blend_table(int64_t vertices, int32_t slots, const int32_t *slot_bone, const float *slot_weight,
                 const double *scale, const int32_t *count, const double *disp, const double *rest,
                 double *out)
{
    #pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < vertices; v++) {
        const double x = rest[3 * v], y = rest[3 * v + 1], z = rest[3 * v + 2];
        double dx = 0.0, dy = 0.0, dz = 0.0;
        for (int32_t k = 0; k < count[v]; k++) {
            const double *m = disp + 12 * (int64_t)slot_bone[v * slots + k];
            const double w = slot_weight[v * slots + k];
            dx += w * (m[0] * x + m[1] * y + m[2] * z + m[3]);
            dy += w * (m[4] * x + m[5] * y + m[6] * z + m[7]);
            dz += w * (m[8] * x + m[9] * y + m[10] * z + m[11]);
        }
        const double s = scale[v];
        out[3 * v] = x + s * dx;
        out[3 * v + 1] = y + s * dy;
        out[3 * v + 2] = z + s * dz;
    }
}
"""


# --- the kernel ------------------------------------------------------------------------------------------

def compile_kernels(workdir: str, tile: int) -> dict[str, ctypes.CDLL]:
    """The kernel built one-threaded and with OpenMP in ``workdir``, loaded: {"1 thread": ..., "OpenMP": ...}."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("kernel_probe needs gcc on PATH")
    source = os.path.join(workdir, "blend.c")
    with open(source, "w") as f:
        f.write(KERNEL_C)
    out: dict[str, ctypes.CDLL] = {}
    for label, extra in (("1 thread", []), ("OpenMP", ["-fopenmp"])):
        lib = os.path.join(workdir, f"blend_{len(out)}.so")
        # -fno-trapping-math lets gcc vectorise the select of a weight's product (no value changes:
        # unlike -ffast-math it keeps IEEE results and the order of every sum).
        subprocess.run([gcc, *FLAGS, "-fPIC", "-shared", f"-DTILE={tile}", *extra, source,
                        "-o", lib], check=True)
        out[label] = _declare(ctypes.CDLL(lib))
    return out


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    p, i64, i32, f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double
    lib.scan_dense.argtypes = [p, i64, i64, p]
    lib.scan_dense.restype = i64
    lib.blend_dense.argtypes = [p, i64, i64, p, p, p, p, f64, p, i32, p, p, p, p]
    lib.blend_dense.restype = i32
    lib.blend_table.argtypes = [i64, i32, p, p, p, p, p, p, p]
    lib.blend_table.restype = None
    return lib


def _ptr(a: NDArray[Any] | None, dtype: type[np.generic]) -> int | None:
    """The address of a C-contiguous array of ``dtype`` (None for None)."""
    if a is None:
        return None
    if a.dtype != dtype or not a.flags["C_CONTIGUOUS"]:
        raise TypeError(f"kernel argument must be C-contiguous {np.dtype(dtype).name}, got {a.dtype}")
    address: int = a.ctypes.data
    return address


@dataclasses.dataclass(frozen=True)
class SlotTable:
    """Every vertex's deform weights, vertex-major, in group order: what the C kernel keeps across poses."""

    slots: int
    bone: NDArray[np.int32]  # (V, slots)
    weight: NDArray[np.float32]  # (V, slots)
    scale: F64  # (V,) a / sum w, 0 where the vertex does not move
    count: NDArray[np.int32]  # (V,)

    @classmethod
    def empty(cls, vertices: int, slots: int) -> SlotTable:
        return cls(slots, np.empty((vertices, slots), dtype=np.int32), np.empty((vertices, slots), dtype=np.float32),
                   np.empty(vertices), np.empty(vertices, dtype=np.int32))


def _table_pointers(table: SlotTable | None) -> tuple[int | None, ...]:
    """The table's four arrays' addresses, or four NULLs (no table written)."""
    if table is None:
        return (None, None, None, None)
    return (_ptr(table.bone, np.int32), _ptr(table.weight, np.float32), _ptr(table.scale, np.float64),
            _ptr(table.count, np.int32))


def displacements(mesh: SkinnedMesh, channel: F64) -> F64:
    """(J, 3, 4) object-space ``P^-1 M_j P - I`` per bone; exactly zero for a bone at rest (numpy leaves
    such bones out of a pose moving few bones, else blends their rounding, far below ``AGREEMENT``)."""
    premat = mesh.mesh_to_armature
    out = np.ascontiguousarray((np.linalg.inv(premat) @ channel @ premat)[:, :3, :] - np.eye(4)[:3])
    out[np.all(channel == np.eye(4), axis=(1, 2))] = 0.0
    return out


def _mask(mesh: SkinnedMesh) -> F64 | None:
    return mesh.mask if mesh.modifier.mask_group in mesh.group_names else None


def c_first_pose(lib: ctypes.CDLL, mesh: SkinnedMesh, channel: F64, table: bool = True,
                 out: F64 | None = None, slots: int = FIRST_SLOTS) -> tuple[F64, SlotTable | None]:
    """The mesh at ``channel`` from its dense weights in one pass, and the slot table (when ``table``)
    of ``slots`` slots a vertex, or as many as the most influences any vertex has when that is more
    (found by the pass, which then runs again)."""
    weights = mesh.weights
    groups, v = weights.shape
    bones = np.ascontiguousarray(mesh.deform_groups(), dtype=np.int32)
    disp = displacements(mesh, channel)
    out = np.empty((v, 3)) if out is None else out
    while True:
        kept = SlotTable.empty(v, slots) if table else None
        most = lib.blend_dense(
            _ptr(weights, np.float32), groups, v, _ptr(bones, np.int32), _ptr(disp, np.float64),
            _ptr(mesh.rest, np.float64), _ptr(_mask(mesh), np.float64), tolerances.BLENDER_MIN_CONTRIB,
            _ptr(out, np.float64), slots, *_table_pointers(kept))
        if kept is None or most <= slots:
            return out, kept
        slots = most  # more influences than the first guess: once more with room for all


def c_another_pose(lib: ctypes.CDLL, mesh: SkinnedMesh, table: SlotTable, channel: F64,
                   out: F64 | None = None) -> F64:
    """The mesh at ``channel`` from the slot table kept from a first pose."""
    disp = displacements(mesh, channel)
    out = np.empty((mesh.vertex_count, 3)) if out is None else out
    lib.blend_table(mesh.vertex_count, table.slots, _ptr(table.bone, np.int32), _ptr(table.weight, np.float32),
                    _ptr(table.scale, np.float64), _ptr(table.count, np.int32), _ptr(disp, np.float64),
                    _ptr(mesh.rest, np.float64), _ptr(out, np.float64))
    return out


# --- timing ----------------------------------------------------------------------------------------------

def median_time(run: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Median seconds of ``repeat`` calls of ``run`` (garbage collected before each); the last result."""
    times = []
    result: T | None = None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    assert result is not None
    return statistics.median(times), result


def interleaved(runs: dict[str, Callable[[int], T]], repeat: int) -> tuple[dict[str, float], dict[str, T]]:
    """Median seconds of each of ``runs``, called with the round number; the runs take turns within each
    round, so a burst of load from another process falls on all of them alike.  Also the last results."""
    times: dict[str, list[float]] = {label: [] for label in runs}
    last: dict[str, T] = {}
    for r in range(repeat):
        for label, run in runs.items():
            gc.collect()
            start = time.perf_counter()
            last[label] = run(r)
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(t) for label, t in times.items()}, last


def other_poses(mesh: SkinnedMesh, repeat: int) -> list[F64]:
    """One pose per run: every deform bone bent about X by 20, 21, ... degrees (benchmark step 4b)."""
    return [standard_poses(mesh.bones, 20.0 + run)[0].channel for run in range(repeat)]


def build_benchmark_rig(vertices: int, bones: int, repeat: int) -> tuple[SkinnedMesh, float, NDArray[np.float32]]:
    """The benchmark rig built in bpy, extracted; Blender's evaluation seconds and positions."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import benchmark
    import bpy

    from skin_audit.blender.read.extract import extract

    start = time.perf_counter()
    obj, arm, _ = benchmark.build_rig(vertices, bones)
    print(f"rig: benchmark.build_rig({vertices}, {bones}), built in {time.perf_counter() - start:.1f} s; "
          f"Blender (bpy) {bpy.app.version_string}")
    seconds, positions = benchmark.blender_evaluation(obj, arm, repeat)
    modifier = next(m for m in obj.modifiers if m.type == "ARMATURE")
    assert isinstance(modifier, bpy.types.ArmatureModifier)
    mesh: SkinnedMesh = extract(obj, modifier, bpy.context.evaluated_depsgraph_get())
    return mesh, seconds, positions


def _gap(a: F64, b: F64) -> float:
    """max |a - b|, equal values (infinities too) and NaN against NaN counting as 0; NaN if only one side is."""
    d = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, np.abs(a - b))
    return float(d.max(initial=0.0))


def plain(mesh: SkinnedMesh) -> SkinnedMesh:
    """The mesh with its B-Bones read as plain bones (each blends its whole bone matrix)."""
    return dataclasses.replace(mesh, bones=dataclasses.replace(mesh.bones, bbones=()))


def _row(label: str, seconds: float, base: float | None) -> str:
    line = f"{label:<64} {seconds:9.4f}"
    if base:
        ratio = seconds / base
        line += f" {ratio:8.2f}x  <=2x {'yes' if ratio <= 2.0 else 'NO '}  <=1x {'yes' if ratio <= 1.0 else 'NO'}"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mesh", metavar="PICKLE", help="a pickled SkinnedMesh instead of building the rig")
    parser.add_argument("--vertices", type=int, default=1_000_000, help="rig vertices when built (default 1000000)")
    parser.add_argument("--bones", type=int, default=32, help="rig bones when built (default 32)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per row; the median is shown")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="OpenMP threads (default: the cores this process may use)")
    parser.add_argument("--tile", type=int, default=TILE, help=f"vertices per tile of the first pass ({TILE})")
    parser.add_argument("--slots", type=int, default=FIRST_SLOTS,
                        help=f"table slots a vertex the first pass writes before it knows the most influences "
                             f"({FIRST_SLOTS}; a mesh with more runs the pass twice)")
    parser.add_argument("--blender-seconds", type=float, default=None,
                        help="with --mesh: Blender's evaluation time measured elsewhere, for the ratios")
    args = parser.parse_args(argv)
    if min(args.repeat, args.threads, args.tile, args.slots) < 1:
        parser.error("--repeat, --threads, --tile and --slots must be at least 1")
    # Read when libgomp loads: threads sleep between parallel regions instead of spinning against
    # numpy's and Blender's own threads timed in the same process.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    heap = keep_freed_memory()  # as benchmark.py and the command line run

    blender_s: float | None = args.blender_seconds
    blender_pos = None
    if args.mesh:
        with open(args.mesh, "rb") as f:
            mesh = pickle.load(f)
        if not isinstance(mesh, SkinnedMesh):
            raise SystemExit(f"{args.mesh} holds a {type(mesh).__name__}, not a SkinnedMesh")
        print(f"mesh: {args.mesh}")
    else:
        mesh, blender_s, blender_pos = build_benchmark_rig(args.vertices, args.bones, args.repeat)
    if not mesh.modifier.use_vertex_groups or mesh.modifier.preserve_volume:
        raise SystemExit("the kernel reproduces the linear blend of vertex groups only (no Preserve Volume)")
    g, v = mesh.weights.shape
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores available, numpy {np.__version__}, "
          f"gcc {' '.join(FLAGS)}, "
          f"OpenMP threads {args.threads} (OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}), freed memory kept "
          f"for reuse: {'yes' if heap else 'no'}, tile {args.tile}, median of {args.repeat}")
    print(f"mesh: {v} vertices, {len(mesh.bones.names)} bones, {g} groups, dense weights "
          f"{mesh.weights.nbytes / 1e6:.0f} MB float32; {int(np.count_nonzero(mesh.weights))} non-zero weights")

    full = mesh
    if has_bbones(mesh):
        print(f"B-Bones: {sum(b is not None for b in mesh.bones.bbones)}; numpy and C are compared on the plain "
              "path (B-Bones read as plain bones), numpy with B-Bones timed beside for reference")
        mesh = plain(mesh)
    poses = other_poses(mesh, args.repeat)
    warm = dataclasses.replace(mesh)
    recompute_blender(warm, warm.read_pose, build_layout=True)
    # numpy: one pose on a fresh copy each run (nothing cached: the dense product where the mesh
    # allows), a first pose building the blend layout, then other poses with the layout kept.
    runs: dict[str, Callable[[int], F64]] = {
        "numpy recompute_blender, one pose (nothing cached)":
            lambda r: recompute_blender(dataclasses.replace(mesh), mesh.read_pose).positions,
        "numpy recompute_blender, first pose building the layout":
            lambda r: recompute_blender(dataclasses.replace(mesh), mesh.read_pose, build_layout=True).positions,
        "numpy recompute_blender, another pose (tables kept)":
            lambda r: recompute_blender(warm, warm.read_pose.at(poses[r])).positions,
    }
    if full is not mesh:
        warm_full = dataclasses.replace(full)
        recompute_blender(warm_full, warm_full.read_pose, build_layout=True)
        runs.update({
            "numpy with B-Bones, first pose (reference)":
                lambda r: recompute_blender(dataclasses.replace(full), full.read_pose).positions,
            "numpy with B-Bones, another pose (reference)":
                lambda r: recompute_blender(warm_full, warm_full.read_pose.at(poses[r])).positions,
        })

    size = mesh.size()
    checks: list[str] = []
    agree = True
    breakdown: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kernel_probe_") as workdir:
        kernels = compile_kernels(workdir, args.tile)
        names = {label: f"C {label}" if label == "1 thread" else f"C {args.threads} threads (OpenMP)"
                 for label in kernels}
        tables = {}
        for label, lib in kernels.items():
            tables[label], c_runs = _c_runs(names[label], lib, mesh, poses, args.slots)
            runs.update(c_runs)
        seconds, last = interleaved(runs, args.repeat)
        first_ref = last["numpy recompute_blender, one pose (nothing cached)"]
        other_ref = last["numpy recompute_blender, another pose (tables kept)"]
        for label, lib in kernels.items():
            c_first, c_other = (last[k] for k in runs if k.startswith(names[label] + ","))
            gaps = (_gap(c_first, first_ref) / size, _gap(c_other, other_ref) / size)
            checks.append(f"{names[label]}: max |C - numpy| / mesh size {size:.3g}: first pose {gaps[0]:.3g}, "
                          f"another pose {gaps[1]:.3g} (table slots {tables[label].slots})")
            agree = agree and all(g <= AGREEMENT for g in gaps)
            breakdown.extend(_breakdown(names[label], lib, mesh, tables[label], args.repeat))

    base = blender_s
    print(f"\n{'recomputation at the benchmark pose':<64} {'seconds':>9} {'/Blender':>9}")
    if base:
        print(_row("Blender evaluation (benchmark step 1)" + ("" if blender_pos is not None else ", given"),
                   base, None))
    for label, t in seconds.items():
        print(_row(label, t, base))
    print("\naccuracy:")
    for line in checks:
        print("  " + line)
    if blender_pos is not None:
        print(f"  numpy vs Blender: max |numpy - Blender| = "
              f"{np.abs(first_ref - blender_pos).max() / size:.3g} of the mesh size (Blender's output is float32)")
    if not agree:
        print(f"  DISAGREE: C and numpy differ by more than {AGREEMENT:g} of the mesh size")
    print("\nwhere the C time goes (preallocated output unless said; GB/s = bytes the kernel must move / time):")
    for line in breakdown:
        print("  " + line)
    return 0 if agree else 1


def _c_runs(name: str, lib: ctypes.CDLL, mesh: SkinnedMesh, poses: list[F64], slots: int
            ) -> tuple[SlotTable, dict[str, Callable[[int], F64]]]:
    """The kernel's first pose and other poses (``poses[run]``) as timed runs; the table the latter read
    (built once here, untimed: the first-pose run builds its own each time)."""
    _, table = c_first_pose(lib, mesh, mesh.read_pose.channel, slots=slots)
    assert table is not None
    kept = table
    return table, {
        f"{name}, first pose (dense weights, table built)":
            lambda r: c_first_pose(lib, mesh, mesh.read_pose.channel, slots=slots)[0],
        f"{name}, another pose (table kept)": lambda r: c_another_pose(lib, mesh, kept, poses[r]),
    }


def _breakdown(name: str, lib: ctypes.CDLL, mesh: SkinnedMesh, table: SlotTable, repeat: int) -> list[str]:
    """Seconds of the kernel's parts: a bare read of the weight rows, the blends without Python around them."""
    weights = mesh.weights
    g, v = weights.shape
    bones = np.ascontiguousarray(mesh.deform_groups(), dtype=np.int32)
    deform_bytes = int(np.count_nonzero(bones >= 0)) * v * 4
    disp = displacements(mesh, mesh.read_pose.channel)
    out = np.empty((v, 3))
    mask = _mask(mesh)
    t_scan, _ = median_time(lambda: lib.scan_dense(_ptr(weights, np.float32), g, v, _ptr(bones, np.int32)), repeat)

    def dense(with_table: bool) -> int:
        t = table if with_table else None
        most: int = lib.blend_dense(
            _ptr(weights, np.float32), g, v, _ptr(bones, np.int32), _ptr(disp, np.float64), _ptr(mesh.rest, np.float64),
            _ptr(mask, np.float64), tolerances.BLENDER_MIN_CONTRIB, _ptr(out, np.float64), table.slots,
            *_table_pointers(t))
        return most

    t_blend, _ = median_time(lambda: dense(False), repeat)
    t_table, _ = median_time(lambda: dense(True), repeat)
    t_fresh, _ = median_time(lambda: c_first_pose(lib, mesh, mesh.read_pose.channel, slots=table.slots), repeat)
    t_again, _ = median_time(lambda: c_another_pose(lib, mesh, table, mesh.read_pose.channel, out), repeat)
    t_again_fresh, _ = median_time(lambda: c_another_pose(lib, mesh, table, mesh.read_pose.channel), repeat)
    t_disp, _ = median_time(lambda: displacements(mesh, mesh.read_pose.channel), repeat)
    io = 2 * v * 3 * 8  # rest read, out written
    table_bytes = table.bone.nbytes + table.weight.nbytes + table.scale.nbytes + table.count.nbytes
    return [
        f"{name}: read every deform row (zero test only) {t_scan:.4f} s ({deform_bytes / t_scan / 1e9:.1f} GB/s "
        f"of {deform_bytes / 1e6:.0f} MB)",
        f"{name}: first pass, no table {t_blend:.4f} s ({(deform_bytes + io) / t_blend / 1e9:.1f} GB/s); "
        f"with table {t_table:.4f} s ({(deform_bytes + io + table_bytes) / t_table / 1e9:.1f} GB/s, table "
        f"{table_bytes / 1e6:.0f} MB); whole first pose, fresh output and table of {table.slots} slots {t_fresh:.4f} s",
        f"{name}: another pose into a reused output {t_again:.4f} s ({(io + table_bytes) / t_again / 1e9:.1f} GB/s), "
        f"fresh output {t_again_fresh:.4f} s; displacement matrices in numpy {t_disp * 1e3:.2f} ms",
    ]


if __name__ == "__main__":
    sys.exit(main())
