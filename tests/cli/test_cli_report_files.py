# SPDX-License-Identifier: GPL-3.0-or-later
"""``skin_audit audit --json --junit --sarif --html --config`` as a user runs it
(a subprocess with this venv's Python and the real bpy module), on RiggedSimple."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ASSET = REPO / "tests" / "assets" / "RiggedSimple" / "glTF-Binary" / "RiggedSimple.glb"
SCHEMAS = REPO / "tests" / "schemas"

pytestmark = pytest.mark.blender


def skin_audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skin_audit", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)


def reports(folder: Path) -> list[str]:
    return [f"--json={folder / 'r.json'}", f"--junit={folder / 'r.xml'}", f"--sarif={folder / 'r.sarif'}",
            f"--html={folder / 'r.html'}"]


def test_all_four_reports_agree_and_validate(tmp_path):
    xmlschema = pytest.importorskip("xmlschema")
    jsonschema = pytest.importorskip("jsonschema")
    run = skin_audit("audit", str(ASSET), *reports(tmp_path), "--sarif-help-uri=https://example.org/report-format.md")
    assert run.returncode == 0, run.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert "config" not in data  # no config file found, nothing changed
    findings = [f for fa in data["files"] for u in fa["rigs"] + fa["meshes"] for f in u["findings"]]
    codes = {f["code"] for f in findings}
    assert {"twist-collapse", "volume-loss"} <= codes

    xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd")).validate(str(tmp_path / "r.xml"))
    root = ET.parse(tmp_path / "r.xml").getroot()
    units = len(data["files"][0]["rigs"]) + len(data["files"][0]["meshes"])
    per_unit_codes = sum(len({f["code"] for f in u["findings"]})
                         for u in data["files"][0]["rigs"] + data["files"][0]["meshes"])
    assert int(root.get("tests")) == units + per_unit_codes and root.get("failures") == "0"

    sarif = json.loads((tmp_path / "r.sarif").read_text())
    jsonschema.Draft4Validator(json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())).validate(sarif)
    assert len(sarif["runs"][0]["results"]) == len(findings)
    assert {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]} == codes

    html = (tmp_path / "r.html").read_text()
    assert html.count('class="heatmap"') >= 2  # twist-collapse and volume-loss drawn on the cylinder
    assert all(f["message"].split("'")[0] in html for f in findings)


def test_config_regrades_ignores_and_lists_every_change(tmp_path):
    rigs = tmp_path / "rigs"
    rigs.mkdir()
    shutil.copy(ASSET, rigs / "a.glb")
    (rigs / "skin_audit.toml").write_text(
        '[audit]\nmax_influences = 8\n[severity]\ntwist-collapse = "error"\nvolume-loss = "ignore"\n')
    # Found beside the audited folder, no --config needed.
    run = skin_audit("audit", str(rigs), *reports(tmp_path), "--max-influences=3")
    assert run.returncode == 1, run.stderr  # twist-collapse is an ERROR now
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["config"]["path"] == str(rigs / "skin_audit.toml")
    actions = sorted((c["action"], c["code"]) for c in data["config"]["changes"])
    # max_influences: the flag (3) won over the file (8), so the file changed nothing there.
    assert actions == [("ignore", "volume-loss"), ("severity", "twist-collapse")]
    assert data["options"]["max_influences"] == 3
    mesh = data["files"][0]["meshes"][0]
    assert [f["severity"] for f in mesh["findings"] if f["code"] == "twist-collapse"] == ["ERROR"]
    assert "volume-loss" not in {f["code"] for f in mesh["findings"]}
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    [hidden] = [r for r in sarif["runs"][0]["results"] if "suppressions" in r]
    assert hidden["ruleId"] == "volume-loss"
    assert "volume-loss" in (tmp_path / "r.html").read_text() and "2 change(s)" in run.stdout


def test_skip_globs_and_option_changes_are_listed(tmp_path):
    for sub in ("archive", "keep"):
        (tmp_path / sub).mkdir()
        shutil.copy(ASSET, tmp_path / sub / "x.glb")
    config = tmp_path / "ci.toml"
    config.write_text('[audit]\nmax_influences = 8\n[paths]\nskip = ["archive/"]\n')
    out = tmp_path / "out"
    out.mkdir()
    run = skin_audit("audit", str(tmp_path), f"--config={config}", f"--json={out / 'r.json'}", "--no-shape-checks")
    assert run.returncode == 0, run.stderr
    data = json.loads((out / "r.json").read_text())
    assert [Path(f["path"]).parent.name for f in data["files"]] == ["keep"]
    changes = {(c["action"], c["code"] or Path(c["path"]).parent.name) for c in data["config"]["changes"]}
    assert changes == {("skip-path", "archive"), ("option", "max_influences")}
    assert data["options"]["max_influences"] == 8


def test_bad_config_and_bad_targets_fail_before_any_work(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('[severity]\nstray-weight = "ignore"\n')
    run = skin_audit("audit", str(ASSET), f"--config={config}", f"--json={tmp_path / 'r.json'}")
    assert run.returncode == 2
    assert f"{config}: [severity]: unknown finding code 'stray-weight'; did you mean 'stray-weights'?" in run.stderr
    assert not (tmp_path / "r.json").exists()
    run = skin_audit("audit", str(ASSET), f"--json={tmp_path / 'r.json'}", f"--html={tmp_path / 'no' / 'r.html'}")
    assert run.returncode == 2 and "does not exist" in run.stderr
    assert not (tmp_path / "r.json").exists()  # all or nothing
    run = skin_audit("audit", str(ASSET), f"--json={tmp_path / 'r'}", f"--sarif={tmp_path / 'r'}")
    assert run.returncode == 2 and "same file" in run.stderr


def test_progress_on_a_terminal_and_quiet_in_a_pipe(tmp_path):
    import os
    import pty

    main, child = pty.openpty()
    try:
        run = subprocess.run([sys.executable, "-m", "skin_audit", "audit", str(ASSET), "--no-shape-checks"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=child, text=True, timeout=300, check=False)
        os.close(child)
        child = -1
        seen = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal is closed once everything is read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if child >= 0:
            os.close(child)
        os.close(main)
    text = seen.decode(errors="replace")
    assert run.returncode == 0
    assert "\rskin_audit: 0/1 files: " in text and "RiggedSimple.glb" in text
    assert "skin_audit: 1 file(s) audited in " in text
    piped = skin_audit("audit", str(ASSET), "--no-shape-checks")
    assert "audited in" not in piped.stderr and "0/1 files" not in piped.stderr
