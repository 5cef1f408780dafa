# SPDX-License-Identifier: GPL-3.0-or-later
"""``scripts/benchmark.py`` runs end to end on a small generated rig and prints every row the
README's Speed section quotes.  No time is judged here (speed is measured, not asserted): the
test holds the script to its output contract so a change elsewhere cannot silently break it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.blender

REPO = Path(__file__).resolve().parents[2]


def test_benchmark_prints_each_step_its_ratio_target_and_result():
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "benchmark.py"), "--vertices", "20000", "--bones", "8",
         "--repeat", "1", "--skip-loop", "--mirror"],
        capture_output=True, text=True, timeout=600, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    judged = {
        "2 weight extraction (group_weights)": 10,
        "4 numpy recomputation, one pose (nothing cached)": 2,
        "  the same against the later target": 1,
        "5 full audit (audit_meshes)": 30,
        "6 audit, shape_checks=False": 30,
    }
    for label, target in judged.items():
        line = next((row for row in out.splitlines() if row.startswith(label)), None)
        assert line is not None, (label, out)
        assert re.search(rf"\d+\.\d+x\s+<=\s+{target}x\s+(PASS|MISS)$", line), line
    assert re.search(r"each run paired with step 1 just before it\s+\d+\.\dx\s+<=\s+30x\s+(PASS|MISS)", out)
    for label in ("1 Blender evaluation", "4b numpy recomputation", "7 pose sweep alone",
                  "  full audit given the sweep's result"):
        assert any(row.startswith(label) for row in out.splitlines()), (label, out)
    cpu = re.search(r"CPU time of a full audit, every thread: (\d+\.\d+) s for (\d+\.\d+) s of wall time", out)
    assert cpu is not None and float(cpu.group(1)) > 0 and float(cpu.group(2)) > 0, out
    assert re.search(r"peak RSS during a full audit: \d+\.\d\d GB", out), out
    assert not re.search(r"\bnan\b", out, re.IGNORECASE), out  # (one run: nothing after an audit to time)
    assert re.search(r"re-evaluates the user's scene once .*: not measured", out), out
    # The mirrored chains make the symmetry checks run: the audit found its pairs, not a missing mirror.
    findings = next(row for row in out.splitlines() if row.startswith("findings: "))
    assert "no-mirrored-bones" not in findings, findings
