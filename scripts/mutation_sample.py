# SPDX-License-Identifier: GPL-3.0-or-later
"""A sampled mutation run over the whole of skin_audit/core, sized for a small machine.

A full mutmut run over the core takes hours on two cores. This script lets mutmut generate
every mutant of the core, then runs a reproducible sample of them: up to ``--sample`` mutants
per module, drawn with a seeded generator per module (the same seed and the same source give
the same names, whatever the other modules hold), and prints the score per module.

    .venv/bin/python scripts/mutation_sample.py --sample 20 --seed 30          # generate + run
    .venv/bin/python scripts/mutation_sample.py --sample 20 --seed 30 --dry-run
    .venv/bin/python scripts/mutation_sample.py --sample 20 --seed 30 --report  # no run
    .venv/bin/python scripts/mutation_sample.py --rerun-survivors --sample 20 --seed 30

Every step goes through ``scripts/mutation.sh``'s configuration (pyproject.toml
[tool.mutmut]: the core tier, no bpy). A module no core-tier test reaches reports
"no tests": it is tested in the Blender tier, which mutmut does not run. Results live in
./mutants (git-ignored); ``.venv/bin/mutmut show NAME`` prints one mutant's diff.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = ROOT / ".venv" / "bin" / "mutmut"
META_ROOT = ROOT / "mutants" / "skin_audit" / "core"
# A name that matches no mutant: mutmut generates every mutant and collects which tests
# reach which function, then stops on the empty selection.
GENERATE_ONLY = "skin_audit.core.__generate_only__*"

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
          36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout",
          37: "caught by type check", None: "not checked"}


def module_of(meta: Path) -> str:
    """``mutants/skin_audit/core/gltf/skin.py.meta`` -> ``core/gltf/skin.py``."""
    return str(meta.relative_to(META_ROOT.parent)).removesuffix(".meta")


def load_meta() -> dict[str, dict[str, int | None]]:
    """Exit code by mutant name, per module, as mutmut left them."""
    out: dict[str, dict[str, int | None]] = {}
    for meta in sorted(META_ROOT.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if codes:
            out[module_of(meta)] = codes
    return out


def draw(meta: dict[str, dict[str, int | None]], sample: int, seed: int) -> dict[str, list[str]]:
    """Up to ``sample`` mutant names per module, drawn by a generator seeded per module."""
    chosen: dict[str, list[str]] = {}
    for module, codes in sorted(meta.items()):
        names = sorted(codes)
        rng = random.Random(f"{seed}:{module}")
        chosen[module] = sorted(rng.sample(names, min(sample, len(names))))
    return chosen


def status(code: int | None) -> str:
    return STATUS.get(code, "suspicious")


def report(meta: dict[str, dict[str, int | None]], chosen: dict[str, list[str]]) -> str:
    """A markdown table of the sample's outcome per module, then the survivors' names."""
    lines = ["| module | mutants | run | killed | survived | no tests | score |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    totals: Counter[str] = Counter()
    survivors: list[str] = []
    for module, names in chosen.items():
        c = Counter(status(meta[module][n]) for n in names)
        killed = c["killed"] + c["timeout"] + c["caught by type check"]
        tested = killed + c["survived"] + c["suspicious"]
        totals.update(c)
        if c["no tests"] == len(names):
            score = "no tests"
        elif tested:
            score = f"{100 * killed / tested:.0f}%"
        else:
            score = "not run"
        lines.append(f"| `{module}` | {len(meta[module])} | {len(names)} | {killed} | "
                     f"{c['survived'] + c['suspicious']} | {c['no tests']} | {score} |")
        survivors += [n for n in names if status(meta[module][n]) in ("survived", "suspicious")]
    killed = totals["killed"] + totals["timeout"] + totals["caught by type check"]
    tested = killed + totals["survived"] + totals["suspicious"]
    lines.append(f"| **all** | {sum(len(m) for m in meta.values())} | "
                 f"{sum(len(n) for n in chosen.values())} | {killed} | "
                 f"{totals['survived'] + totals['suspicious']} | {totals['no tests']} | "
                 f"{100 * killed / max(tested, 1):.0f}% |")
    if totals["not checked"]:
        lines.append(f"\n{totals['not checked']} sampled mutants not checked yet.")
    lines.append("\nsurvivors:")
    lines += [f"- {n}" for n in survivors]
    return "\n".join(lines)


def mutmut_run(names: list[str], children: int) -> int:
    """``mutmut run`` under ``nice``; mutmut re-runs mutants it is given by name.

    One thread per mutant: mutmut forks its test process per mutant, and a child forked
    after numpy's BLAS threads started can wait forever on them (every mutant of a test
    that multiplies matrices then times out); the blend's own pool is kept to one too."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               SKIN_AUDIT_THREADS="1")
    cmd = ["nice", "-n", "10", str(MUTMUT), "run", "--max-children", str(children), *names]
    return subprocess.call(cmd, cwd=ROOT, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=20, help="mutants per module (20)")
    parser.add_argument("--seed", type=int, default=30, help="seed of the draw (30)")
    parser.add_argument("--children", type=int,
                        default=int(os.environ.get("MUTATION_CHILDREN", "1")),
                        help="mutmut --max-children (1; env MUTATION_CHILDREN)")
    parser.add_argument("--module", action="append", default=[],
                        help="only modules whose path contains this (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print the names, run nothing")
    parser.add_argument("--report", action="store_true", help="report the last run, run nothing")
    parser.add_argument("--rerun-survivors", action="store_true",
                        help="run again the sampled mutants that survived (after new tests)")
    parser.add_argument("--rerun-timeouts", action="store_true",
                        help="run the timed-out sampled mutants again with the not-checked ones")
    parser.add_argument("--again", action="store_true",
                        help="run every sampled mutant, even those with a result")
    args = parser.parse_args(argv)

    if not any(META_ROOT.rglob("*.py.meta")):
        mutmut_run([GENERATE_ONLY], args.children)  # stops on the empty selection, by design
    meta = load_meta()
    if not meta:
        print("mutmut generated no mutants (see its output above)", file=sys.stderr)
        return 1
    chosen = draw(meta, args.sample, args.seed)
    if args.module:
        chosen = {m: n for m, n in chosen.items() if any(s in m for s in args.module)}
    names = [n for m, ns in chosen.items() for n in ns if args.again
             or status(meta[m][n]) == "not checked"
             or (args.rerun_timeouts and status(meta[m][n]) == "timeout")]
    if args.rerun_survivors:
        names = [n for m, ns in chosen.items() for n in ns
                 if status(meta[m][n]) in ("survived", "suspicious")]
    if args.dry_run:
        print("\n".join(names))
        return 0
    if not args.report and names:
        start = time.monotonic()
        mutmut_run(names, args.children)
        print(f"sampled run: {len(names)} mutants in {time.monotonic() - start:.0f} s")
        meta = load_meta()
    print(f"sample {args.sample} per module, seed {args.seed}")
    print(report(meta, chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
