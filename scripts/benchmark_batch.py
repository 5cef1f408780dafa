# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark batch audits: files per minute in one process and with worker processes.

    .venv/bin/python scripts/benchmark_batch.py [--assets tests/assets] [--copies 3] [--jobs 1,2]
        [--no-shape-checks]

Copies every asset folder under ``--assets`` ``--copies`` times into a temporary
library (a glTF keeps its .bin beside it), then audits the library

1. in this process (``audit_paths``, Blender already imported: the time of the import
   itself is printed apart), timing each file from the run's progress callback;
2. with ``audit_paths_parallel`` for each ``--jobs`` value: worker processes, each
   importing Blender once.

Prints, for each run, the wall time and files per minute; for the worker runs, the
cost of a worker start (Python, Blender and skin_audit imports), the mean per-file
time inside the worker and the per-file overhead of the batch machinery (wall time
x workers - starts - audits, over files: pipes, JSON, idle workers at the end);
then the in-process per-file time against the file's vertex count (a least-squares
line: fixed cost per file + cost per 1000 vertices).  A benchmark, not a test: it
prints numbers and exits 0 unless something fails.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def build_library(assets: Path, copies: int, into: Path) -> list[str]:
    for n in range(copies):
        for folder in sorted(p for p in assets.iterdir() if p.is_dir()):
            shutil.copytree(folder, into / f"copy{n}" / folder.name)
    return [str(into)]


def vertices(file_audit) -> int:
    return sum(m.vertices for m in file_audit.meshes)


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--assets", type=Path, default=REPO / "tests" / "assets")
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--jobs", default="1,2", help="worker counts, comma separated")
    parser.add_argument("--no-shape-checks", action="store_true")
    args = parser.parse_args()

    began = time.perf_counter()
    import bpy

    import_seconds = time.perf_counter() - began
    from skin_audit.batch.local import audit_paths_parallel
    from skin_audit.blender.run.audit_files import audit_paths
    from skin_audit.core.audit.options import AuditOptions

    options = AuditOptions(shape_checks=not args.no_shape_checks)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; Python {platform.python_version()}, "
          f"bpy {bpy.app.version_string}; shape checks {'off' if args.no_shape_checks else 'on'}")
    with tempfile.TemporaryDirectory(prefix="skin_audit_bench_") as tmp:
        library = build_library(args.assets, args.copies, Path(tmp))

        # 1. in this process
        stamps: list[float] = []
        began = time.perf_counter()
        files = audit_paths(library, options, progress=lambda _fa: stamps.append(time.perf_counter()))
        wall = time.perf_counter() - began
        per_file = [b - a for a, b in zip([began, *stamps[:-1]], stamps, strict=True)]
        n = len(files)
        ok = sum(fa.status == "ok" for fa in files)
        print(f"library: {n} files ({ok} audited, {n - ok} errors) = {args.copies} copies of {args.assets}")
        print(f"\n{'run':<22}{'wall s':>9}{'files/min':>11}{'start s':>10}{'file s':>9}{'overhead s/file':>17}")
        print(f"{'in process':<22}{wall:>9.2f}{n / wall * 60:>11.1f}{import_seconds:>10.2f}"
              f"{sum(per_file) / n:>9.3f}{'-':>17}")
        reference = [fa.to_dict() for fa in files]

        # 2. worker processes
        for jobs in (int(j) for j in args.jobs.split(",")):
            result = audit_paths_parallel(library, options, jobs=jobs, stream=io.StringIO())
            timed = [s for s in result.file_seconds if s is not None]
            starts = sum(result.startup_seconds)
            overhead = (result.seconds * result.jobs - starts - sum(timed)) / n
            same = [fa.to_dict() for fa in result.files] == reference
            print(f"{f'--jobs {jobs}':<22}{result.seconds:>9.2f}{n / result.seconds * 60:>11.1f}"
                  f"{starts / max(len(result.startup_seconds), 1):>10.2f}{sum(timed) / max(len(timed), 1):>9.3f}"
                  f"{overhead:>17.3f}" + ("" if same else "   REPORT DIFFERS from the in-process run"))
        print("\nstart s: import of Python + Blender + skin_audit, once per worker (in process: `import bpy`)\n"
              "file s: mean time of one file's load and audit (in the worker, or in this process)\n"
              "overhead: batch machinery per file (pipes, JSON, workers idle at the end of the run)")

        # 3. cost against vertices, from the in-process times of the audited files
        pairs = [(vertices(fa), t) for fa, t in zip(files, per_file, strict=True) if fa.status == "ok"]
        a, b = fit([float(v) for v, _ in pairs], [t for _, t in pairs])
        print(f"\nper file in process: {a:.3f} s + {b * 1000:.4f} s per 1000 vertices "
              f"(least squares over {len(pairs)} files of {min(v for v, _ in pairs)} to "
              f"{max(v for v, _ in pairs)} vertices)")
        for v in sorted({v for v, _ in pairs}):
            times = sorted(t for w, t in pairs if w == v)
            print(f"  {v:>7} vertices: median {times[len(times) // 2]:.3f} s over {len(times)} file(s)")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # bpy 4.2 can crash in its own shutdown
