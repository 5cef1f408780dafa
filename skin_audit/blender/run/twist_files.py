# SPDX-License-Identifier: GPL-3.0-or-later
"""The demo command: run the experiment in a clean scene and write its files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...core.output_files import json_text, write_all
from ...core.twist.cylinder import MID_RING
from ...core.twist.outputs import (
    FIGURE_FILE,
    RADII_FILE,
    SCENE_FILE,
    radii_csv,
    scene_json,
    twist_summary_text,
    wireframe_svg,
)
from ...core.twist.seed import seed_figures
from ..session import reset_to_empty_scene
from .twist_run import run_twist_experiment

SUMMARY_FILE = "twist_summary.txt"


def run_and_write_demo(
    out_dir: str | Path, angles_deg: Sequence[float], methods: Sequence[str]
) -> tuple[str, bool]:
    """Run in a fresh empty scene, write all files at once; return (summary, has_errors)."""
    reset_to_empty_scene()
    run = run_twist_experiment(angles_deg, methods)
    summary = twist_summary_text(run.binds, run.checks, run.findings, seed_figures())
    written = write_all(out_dir, {
        SCENE_FILE: json_text(scene_json(run.scene)),
        RADII_FILE: radii_csv(run.checks),
        FIGURE_FILE: wireframe_svg(run.scene, MID_RING),
        SUMMARY_FILE: summary,
    })
    summary += "\nWrote:\n" + "".join(f"  {p}\n" for p in written)
    return summary, any(f.severity == "ERROR" for f in run.findings)
