# SPDX-License-Identifier: GPL-3.0-or-later
"""The batch tests' assets, their fault worker and a comparison helper."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "tests" / "assets"
FAULT_WORKER = Path(__file__).resolve().parent / "fault_worker.py"

#: Seven entries: four .blend files (a folder), a .glb, a .gltf with its .bin, and a missing path.
BATCH_PATHS = (
    str(ASSETS / "BlenderIO_32_weights_influence"),
    str(ASSETS / "RiggedSimple" / "glTF-Binary" / "RiggedSimple.glb"),
    str(ASSETS / "RiggedSimple" / "glTF" / "RiggedSimple.gltf"),
    str(ASSETS / "no_such_rig.glb"),
)


def fault_command(**faults: str) -> tuple[str, ...]:
    """The fault worker's command line: ``crash_on="x.glb"`` -> ``--crash-on x.glb``."""
    args = [a for hook, name in faults.items() for a in (f"--{hook.replace('_', '-')}", name)]
    return (sys.executable, str(FAULT_WORKER), *args, "--")


def file_dicts(files) -> list[dict]:
    return [fa.to_dict() for fa in files]
