# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML report in a real browser: headless Chromium draws it with no console
message (the page's Content-Security-Policy turns any load attempt into one), and
the screenshot shows the heatmap, not a blank page.

Needs the Debian package ``chromium``; skipped without it unless
SKIN_AUDIT_REQUIRE_CHROMIUM=1 (CI sets it), then it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.findings import Finding
from skin_audit.core.reports.html import CSP, MeshPicture, html_page

Image = pytest.importorskip("PIL.Image")  # dev dependency (requirements-dev.txt)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--hide-scrollbars"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("SKIN_AUDIT_REQUIRE_CHROMIUM"):
        pytest.fail("SKIN_AUDIT_REQUIRE_CHROMIUM is set but no chromium is on PATH (apt-get install -y chromium)")
    pytest.skip("no chromium on PATH (apt-get install -y chromium)")


def shoot(page: Path, tmp: Path, size: str = "1000,1500") -> tuple[np.ndarray, list[str]]:
    """Screenshot (H, W, 3) uint8 and the browser's console lines."""
    shot = tmp / (page.stem + ".png")
    run = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={tmp / ('profile-' + page.stem)}",
                          f"--screenshot={shot}", f"--window-size={size}", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert shot.is_file(), f"no screenshot; chromium said:\n{run.stderr[-2000:]}"
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    with Image.open(shot) as im:
        return np.asarray(im.convert("RGB")), console


def cylinder(rings: int = 17, segments: int = 32) -> tuple[np.ndarray, np.ndarray]:
    z = np.linspace(0.0, 2.0, rings)
    a = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    pos = np.array([(np.cos(t), np.sin(t), h) for h in z for t in a])
    tri = [(r * segments + s, r * segments + (s + 1) % segments, (r + 1) * segments + (s + 1) % segments)
           for r in range(rings - 1) for s in range(segments)]
    tri += [(r * segments + s, (r + 1) * segments + (s + 1) % segments, (r + 1) * segments + s)
            for r in range(rings - 1) for s in range(segments)]
    return pos, np.array(tri)


def report_and_pictures():
    pos, tri = cylinder()
    w = pos[:, 2] / 2.0
    collapse = 1.0 - np.sqrt(1.0 - 4.0 * w * (1.0 - w))  # the twist experiment at 180 degrees
    hit = tuple(np.flatnonzero(collapse > 0.5).tolist())
    twist = Finding("twist-collapse", "WARNING", "the mid ring collapses at 180 degrees", len(hit), hit,
                    ("Bone.001",))
    report = {"tool": {"version": "0.1.0"}, "blender_version": "5.0.1", "options": {"fail_on": "error"},
              "summary": {"worst_severity": "WARNING"},
              "files": [{"path": "cylinder.blend", "status": "ok", "meshes": [
                  {"object": "Cylinder", "armature": "Armature", "vertices": len(pos), "metrics": {},
                   "findings": [twist.to_dict()]}]}]}
    return report, {("cylinder.blend", "Cylinder"): MeshPicture(pos, tri, {"twist-collapse": collapse})}


def test_page_renders_with_its_heatmap_and_no_console_message(tmp_path):
    report, pictures = report_and_pictures()
    page = tmp_path / "report.html"
    page.write_text(html_page(report, "error", pictures), encoding="utf-8")
    pixels, console = shoot(page, tmp_path)
    assert console == []
    assert pixels.std() > 20  # not one flat colour
    r, g, b = (pixels[..., k].astype(int) for k in range(3))
    red = (r > 180) & (g < 90) & (b < 90)
    blue = (b > 180) & (r < 90) & (g < 160)  # the cold end of the ramp: blue to blue-cyan
    # The legend's ramp alone is about 180 x 10 px; the two views of the mesh are far more.
    assert red.sum() > 3000 and blue.sum() > 3000
    rows = np.flatnonzero(red.any(axis=1))
    # The collapse is worst at the mid ring: red sits between blue rows above and below it.
    blue_rows = np.flatnonzero(blue.any(axis=1))
    assert blue_rows.min() < np.median(rows) < blue_rows.max()


def test_the_console_check_has_teeth(tmp_path):
    """A page that tries to load anything (here an image beside it) is reported by the browser."""
    report, pictures = report_and_pictures()
    bad = html_page(report, "error", pictures).replace("</main>", '<img src="beside.png"></main>')
    page = tmp_path / "bad.html"
    page.write_text(bad, encoding="utf-8")
    _, console = shoot(page, tmp_path, "600,400")
    assert any("Content Security Policy" in line for line in console)


def test_shared_grey_drawing_and_overlay_look_like_drawing_every_triangle(tmp_path):
    """A picture that takes the grey mesh from the page's shared drawing (``<use>``) and paints only
    the finding's triangles and what covers them looks like the picture drawn whole, in the
    browser: the same pixels, but for antialiased edges drawn twice."""
    from skin_audit.core.reports.html import base_svg, heatmap_svg

    pos, tri = cylinder(rings=33, segments=48)  # 3072 triangles: clustered to 2000, then shared
    picture = MeshPicture(pos, tri)
    values = np.full(len(pos), np.nan)
    hit = np.flatnonzero((pos[:, 2] > 0.7) & (pos[:, 2] < 1.3) & (pos[:, 0] > -0.2))  # a band, half way round
    values[hit] = pos[hit, 2]
    shared = heatmap_svg(picture, values, base_id="m0")
    whole = heatmap_svg(picture, values)
    assert len(shared) < 0.6 * len(whole)  # the point of sharing
    head = f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{CSP}"></head>' \
           '<body style="margin:0">'
    defs = ('<svg xmlns="http://www.w3.org/2000/svg" width="0" height="0" style="position:absolute">'
            f"<defs>{base_svg(picture, 'm0')}</defs></svg>")
    shots = []
    for name, body in (("shared", shared + defs), ("whole", whole)):
        page = tmp_path / f"{name}.html"
        page.write_text(head + body + "</body></html>", encoding="utf-8")
        pixels, console = shoot(page, tmp_path, "600,340")
        assert console == []
        shots.append(pixels.astype(int))
    shared_px, whole_px = shots
    coloured = (np.abs(whole_px - whole_px.mean(axis=2, keepdims=True)) > 40).any(axis=2)
    assert coloured.sum() > 2000  # the band is drawn, in colour
    differ = (np.abs(shared_px - whole_px) > 48).any(axis=2)
    assert differ.mean() < 0.01, differ.sum()
