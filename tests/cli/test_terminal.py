# SPDX-License-Identifier: GPL-3.0-or-later
"""The terminal of ``skin_audit audit`` as a CI log reader sees it, run for real (a subprocess
with this venv's Python and the real bpy module): every WARNING and ERROR the JSON report
holds, the rigs' own included, is on stdout; ``--min-severity`` and ``--quiet`` list less but
count everything; the summary says where the reports went; Blender's own log lines never
reach stdout or the progress line."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "tests" / "assets"
#: Real rigs whose armature has WARNINGs of its own (mirror-axis-mismatch), besides their meshes'.
REAL = [ASSETS / "CesiumMan" / "glTF-Binary" / "CesiumMan.glb", ASSETS / "RiggedFigure" / "glTF-Binary" /
        "RiggedFigure.glb"]

pytestmark = pytest.mark.blender


def skin_audit(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skin_audit", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def scaled_rigs(bpy, tmp_path_factory):
    """A .blend whose two armatures carry rig-level findings only: one mirrored (negative scale,
    ERROR), one stretched (non-uniform scale, WARNING)."""
    from tests.factories import blender_rigs as rb

    bpy.ops.wm.read_factory_settings(use_empty=True)
    for name, scale in (("Mirrored", (1.0, 1.0, -1.0)), ("Stretched", (1.0, 2.0, 1.0))):
        _, arm = rb.chain_rig(name)
        arm.scale = scale
    path = tmp_path_factory.mktemp("terminal") / "scaled.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


def json_findings(path: Path) -> list[tuple[str, str, str, str]]:
    """(severity, code, owner, message) of every finding of every rig and mesh in the JSON report."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(f["severity"], f["code"], u.get("object", u.get("armature")), f["message"])
            for fa in data["files"] for u in fa["rigs"] + fa["meshes"] for f in u["findings"]]


def owner_lines(stdout: str) -> dict[str, list[str]]:
    """stdout's finding lines under each rig or mesh heading ('  Name ...' then '    [SEV] ...')."""
    out: dict[str, list[str]] = {}
    owner = ""
    for line in stdout.splitlines():
        if line.startswith("  ") and not line.startswith("    ") and not line.startswith("  counts:"):
            owner = line.strip().split(" ")[0]
        elif line.startswith("    ["):
            out.setdefault(owner, []).append(line.strip())
    return out


def test_every_warning_and_error_of_the_json_is_on_the_terminal(scaled_rigs, tmp_path):
    report = tmp_path / "r.json"
    run = skin_audit("audit", *REAL, scaled_rigs, "--json", report, "--fail-on", "never")
    assert run.returncode == 0, run.stderr[-3000:]
    found = [f for f in json_findings(report) if f[0] in ("WARNING", "ERROR")]
    data = json.loads(report.read_text(encoding="utf-8"))
    rig_codes = {f["code"] for fa in data["files"] for r in fa["rigs"] for f in r["findings"]
                 if f["severity"] in ("WARNING", "ERROR")}
    # The rigs' own findings are what the terminal used to leave out: make sure the run has them.
    assert {"mirror-axis-mismatch", "negative-armature-scale", "non-uniform-armature-scale"} <= rig_codes
    shown = owner_lines(run.stdout)
    for severity, code, owner, message in found:
        assert f"[{severity}] {code}: {message}" in shown.get(owner, []), (owner, code, run.stdout[-3000:])
    assert "worst finding: ERROR" in run.stdout


def test_min_severity_and_quiet_list_less_and_count_everything(scaled_rigs, tmp_path):
    report, html = tmp_path / "r.json", tmp_path / "r.html"
    run = skin_audit("audit", REAL[1], scaled_rigs, "--json", report, "--html", html, "--fail-on", "never",
                     "--quiet", "--min-severity", "error")
    assert run.returncode == 0, run.stderr[-3000:]
    found = json_findings(report)
    listed = [line for lines in owner_lines(run.stdout).values() for line in lines]
    assert sorted(listed) == sorted(f"[{s}] {c}: {m}" for s, c, _, m in found if s == "ERROR")
    assert listed  # the negative scale
    # RiggedFigure has no ERROR: left out whole; the metric lines are gone.
    assert "RiggedFigure.glb" not in run.stdout and "numpy vs Blender" not in run.stdout
    # Counts per code, for everything the file holds.
    counts = [line for line in run.stdout.splitlines() if line.startswith("  counts: ")]
    assert len(counts) == 1
    for severity, code, _, _ in found[-4:]:
        assert code in counts[0] and severity in counts[0]
    assert f"reports: JSON {report}, HTML {html}" in run.stdout
    assert "findings: " in run.stdout.splitlines()[-2] and "worst finding: ERROR" in run.stdout


def read_terminal(main: int) -> str:
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal is closed once everything is read
            break
        if not chunk:
            break
        seen += chunk
    return seen.decode(errors="replace")


def test_blender_log_stays_off_stdout_and_the_progress_line(scaled_rigs, tmp_path):
    """A real .blend read by the real bpy: Blender logs 'Read blend: ...' from C; with stderr a
    terminal, each of its lines is a line of its own, never written into the progress line, and
    stdout holds only the summary."""
    truncated = tmp_path / "truncated.blend"
    truncated.write_bytes(scaled_rigs.read_bytes()[:4000])
    args = ["audit", scaled_rigs, truncated, "--html", tmp_path / "r.html", "--no-shape-checks", "--fail-on", "never"]
    main, child = pty.openpty()
    try:
        run = subprocess.run([sys.executable, "-m", "skin_audit", *map(str, args)],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=child, text=True, timeout=600, check=False)
        os.close(child)
        child = -1
        terminal = read_terminal(main)
    finally:
        if child >= 0:
            os.close(child)
        os.close(main)
    assert run.returncode == 2, terminal[-3000:]  # the truncated file cannot be audited
    assert "Read blend" not in run.stdout
    assert run.stdout.splitlines()[0].startswith(f"{scaled_rigs}: 2 rig(s), 2 skinned mesh(es)")
    assert "\rskin_audit: 0/2 files: " in terminal and "skin_audit: 2 file(s) audited in " in terminal
    # Every progress line ends where the next redraw or a line of its own begins.
    for piece in terminal.split("\rskin_audit: ")[1:]:
        line = piece.split("\r")[0]
        assert "Read blend" not in line and "blend  " not in line, repr(piece[:300])
    # Blender's lines, for both files, each from its own start.
    lines = terminal.replace("\r\x1b[K", "\n").replace("\r", "\n").splitlines()
    read = [line for line in lines if "Read blend:" in line]
    assert len(read) == 2 and all(line.split("|")[-1].strip().startswith("Read blend:") for line in read), read
    assert not any(line.startswith("skin_audit") and "Read blend" in line for line in lines)

    # --quiet: Blender's lines only for the file that could not be audited, its last ones.
    quiet = skin_audit(*args, "--quiet")
    assert quiet.returncode == 2 and "Read blend" not in quiet.stdout
    said = quiet.stderr.splitlines()
    head = [n for n, line in enumerate(said) if "Blender's output while loading" in line]
    assert len(head) == 1 and str(truncated) in said[head[0]], quiet.stderr[-3000:]
    assert any(line.split("|")[-1].strip().startswith("Read blend:") for line in said[head[0] + 1:])
    assert not any("Read blend" in line and "scaled.blend" in line for line in said)


def test_names_from_files_cannot_forge_terminal_lines():
    from skin_audit.core.reports.text import summary_text, terminal_line

    assert terminal_line("Body\n[ERROR] fake\x1b[2J\r") == "Body\\n[ERROR] fake\\x1b[2J\\r"
    finding = {"code": "stray-weights", "severity": "WARNING", "message": "group 'a\nb'"}
    report = {"summary": {"files": 1, "files_with_errors": 0, "meshes": 1, "rigs": 0, "worst_severity": "WARNING"},
              "files": [{"path": "x\n.blend", "status": "ok", "rigs": [], "meshes": [
                  {"object": "Body\n    [ERROR] forged: line", "armature": "Rig", "vertices": 3, "metrics": {},
                   "findings": [finding]}]}]}
    text = summary_text(report, "error")
    assert not [line for line in text.splitlines() if "[ERROR]" in line and not line.startswith("  Body\\n")]
    assert len(text.splitlines()) == 5  # file, mesh, finding, counts, totals


def test_quiet_shows_no_progress_line_in_workers_either(tmp_path):
    """Two files run in worker processes (no --html): on a terminal, --quiet leaves out the
    progress line and keeps the batch's one summary line."""
    main, child = pty.openpty()
    try:
        run = subprocess.run([sys.executable, "-m", "skin_audit", "audit", *REAL, "--no-shape-checks", "--quiet",
                              "--fail-on", "never", "--jobs", "2"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=child, text=True, timeout=600, check=False)
        os.close(child)
        child = -1
        terminal = read_terminal(main)
    finally:
        if child >= 0:
            os.close(child)
        os.close(main)
    assert run.returncode == 0, terminal[-3000:]
    assert "files, " not in terminal and "failed so far" not in terminal, terminal[-2000:]
    assert "skin_audit: 2 file(s) in " in terminal and "with 2 worker(s)" in terminal
