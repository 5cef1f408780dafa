# SPDX-License-Identifier: GPL-3.0-or-later
"""Audit the real-rig corpus and hold every WARNING/ERROR finding against its recorded verdict.

    .venv/bin/python tests/corpus/collect.py [--jobs N] [--json OUT] [--all]

Audits ``tests/corpus`` and ``tests/assets`` in one command (worker processes, ``--jobs``),
then lists the findings at WARNING or ERROR that ``verdicts.toml`` does not judge yet (to
triage), the findings judged false or noise that still come back at WARNING/ERROR, the true
ones that no longer come back, and the precision (true / all distinct WARNING/ERROR
findings).  ``--all`` lists every finding with its verdict.  Exit status 0 when every
finding has a verdict, 1 otherwise.

A finding is keyed by (file, object, code): the object is the mesh, ``armature:NAME`` for a
finding about a whole rig, ``<file>`` for a file the audit could not read (code
``file-error``).  Several findings with one key (a rig's per-mesh findings of one code) count
as one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"
#: What the corpus audits: the corpus and the older real rigs beside it.
AUDITED = ("tests/corpus", "tests/assets")
VERDICTS = CORPUS / "verdicts.toml"
SEVERE = ("WARNING", "ERROR")
VERDICT_KINDS = ("true", "noise", "false")

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Found:
    severity: str
    message: str


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    measured: str
    check: str


@dataclass(frozen=True)
class Comparison:
    unjudged: dict[Key, Found]
    returned: dict[Key, Found]  # judged false or noise, still at WARNING/ERROR
    vanished: dict[Key, Verdict]  # judged true, no longer at WARNING/ERROR
    judged: dict[Key, Verdict]  # verdicts of the findings present

    @property
    def precision(self) -> float:
        """True findings over all distinct WARNING/ERROR findings (unjudged count as not true)."""
        total = len(self.judged) + len(self.unjudged)
        true = sum(v.verdict == "true" for v in self.judged.values())
        return true / total if total else 1.0

    def count(self, kind: str) -> int:
        return sum(v.verdict == kind for v in self.judged.values())


def run_audit(out: Path, jobs: int | None = None) -> dict:
    """The audit's JSON report over the corpus (one command, ``--jobs`` worker processes)."""
    jobs = jobs or max(1, min(2, os.cpu_count() or 1))
    cmd = [sys.executable, "-m", "skin_audit", "audit", *AUDITED, "--json", str(out), "--fail-on", "never",
           "--jobs", str(jobs)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    # Exit 2 says a file could not be read; the report still holds it (status "error").
    if done.returncode not in (0, 2) or not out.exists():
        raise RuntimeError(f"the audit failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def severe_findings(report: dict) -> dict[Key, Found]:
    """Every WARNING/ERROR finding of a report, keyed by (file, object, code)."""
    out: dict[Key, Found] = {}
    for f in report["files"]:
        path = f["path"]
        if f.get("status") != "ok":
            out[(path, "<file>", "file-error")] = Found("ERROR", str(f.get("error", f.get("status"))))
        for rig in f.get("rigs", []):
            for g in rig["findings"]:
                if g["severity"] in SEVERE:
                    out.setdefault((path, f"armature:{rig['armature']}", g["code"]), Found(g["severity"], g["message"]))
        for mesh in f.get("meshes", []):
            for g in mesh["findings"]:
                if g["severity"] in SEVERE:
                    out.setdefault((path, mesh["object"], g["code"]), Found(g["severity"], g["message"]))
    return out


def load_verdicts(path: Path = VERDICTS) -> dict[Key, Verdict]:
    """The recorded verdicts; a duplicate key or an unknown verdict is an error naming the entry."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out: dict[Key, Verdict] = {}
    for n, e in enumerate(data.get("finding", [])):
        key = (e["file"], e["object"], e["code"])
        if key in out:
            raise ValueError(f"{path.name}: finding #{n + 1} {key} is recorded twice")
        if e["verdict"] not in VERDICT_KINDS:
            raise ValueError(f"{path.name}: finding #{n + 1} {key} has verdict {e['verdict']!r}; "
                             f"expected one of {', '.join(VERDICT_KINDS)}")
        out[key] = Verdict(e["verdict"], e["reason"], str(e.get("measured", "")), e.get("check", ""))
    return out


def compare(found: dict[Key, Found], verdicts: dict[Key, Verdict]) -> Comparison:
    judged = {k: verdicts[k] for k in found if k in verdicts}
    return Comparison(
        unjudged={k: v for k, v in found.items() if k not in verdicts},
        returned={k: v for k, v in found.items() if k in verdicts and verdicts[k].verdict != "true"},
        vanished={k: v for k, v in verdicts.items() if v.verdict == "true" and k not in found},
        judged=judged,
    )


def per_code(c: Comparison) -> dict[str, dict[str, int]]:
    """Counts of true / noise / false / unjudged per code."""
    table: dict[str, dict[str, int]] = {}
    for k, v in c.judged.items():
        table.setdefault(k[2], dict.fromkeys((*VERDICT_KINDS, "unjudged"), 0))[v.verdict] += 1
    for k in c.unjudged:
        table.setdefault(k[2], dict.fromkeys((*VERDICT_KINDS, "unjudged"), 0))["unjudged"] += 1
    return dict(sorted(table.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=None, help="worker processes for the audit (default: up to 2)")
    ap.add_argument("--json", type=Path, default=None, help="keep the audit's JSON report here")
    ap.add_argument("--report", type=Path, default=None, help="read this JSON report instead of auditing")
    ap.add_argument("--all", action="store_true", help="list every finding with its verdict")
    args = ap.parse_args(argv)
    if args.report:
        report = json.loads(args.report.read_text())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = args.json or Path(tmp) / "corpus.json"
            report = run_audit(out, args.jobs)
    found = severe_findings(report)
    c = compare(found, load_verdicts())
    if args.all:
        for k in sorted(found):
            v = c.judged.get(k)
            print(f"{v.verdict if v else 'UNJUDGED':8} {found[k].severity:7} {k[2]:28} {k[0]} :: {k[1]}"
                  + (f"  -- {v.reason}" if v else ""))
    for title, items in (("no verdict yet (triage these)", c.unjudged),
                         ("judged false or noise, still WARNING/ERROR", c.returned)):
        print(f"\n{title}: {len(items)}")
        for k in sorted(items):
            print(f"  {items[k].severity:7} {k[2]:28} {k[0]} :: {k[1]}\n           {items[k].message[:160]}")
    print(f"\njudged true, no longer WARNING/ERROR: {len(c.vanished)}")
    for k in sorted(c.vanished):
        print(f"  {k[2]:28} {k[0]} :: {k[1]}")
    print(f"\n{len(found)} distinct WARNING/ERROR findings: {c.count('true')} true, {c.count('noise')} noise, "
          f"{c.count('false')} false, {len(c.unjudged)} without verdict; precision {c.precision:.3f}")
    for code, n in per_code(c).items():
        total = sum(n.values())
        print(f"  {code:30} {n['true']:3}/{total:<3} true  (noise {n['noise']}, false {n['false']}, "
              f"unjudged {n['unjudged']})")
    return 0 if not c.unjudged else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
