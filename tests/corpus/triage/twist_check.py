# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent measurement behind the verdicts of twist-region-crowded findings.

    .venv/bin/python tests/corpus/triage/twist_check.py FILE OBJECT VERTICES.json BONE...

Loads FILE into Blender (common.load), takes OBJECT's triangles whose corners are all among the
finding's vertices (VERTICES.json: a list of indices), turns each BONE about its own Y axis (a
twist) by 90 and 180 degrees, one at a time, and prints, as JSON, the smallest ratio of a posed
triangle's area to its rest area on Blender's evaluated mesh: a region wrung like a candy
wrapper pinches its triangles. No skin_audit code is used.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.corpus.triage.common import REPO, armature_of, load, world_positions  # noqa: E402
from tests.corpus.triage.surface_check import triangles_of  # noqa: E402


def main(argv: list[str]) -> None:
    import bpy

    path, name, vertices_file, *bones = argv
    load(bpy, REPO / path)
    obj = bpy.data.objects[name]
    arm = armature_of(obj)
    verts = set(json.loads(Path(vertices_file).read_text()))
    tri = triangles_of(obj)
    tri = tri[np.array([all(int(v) in verts for v in t) for t in tri], dtype=bool)]

    def area(p: np.ndarray) -> np.ndarray:
        return 0.5 * np.linalg.norm(np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]]), axis=1)

    rest = world_positions(bpy, obj)
    a0 = area(rest)
    out = {}
    for bone in bones:
        pb = arm.pose.bones[bone]
        pb.rotation_mode = "XYZ"
        for degrees in (90, 180):
            pb.rotation_euler = (0.0, math.radians(degrees), 0.0)
            bpy.context.view_layer.update()
            ratio = area(world_positions(bpy, obj)) / np.maximum(a0, 1e-12)
            out[f"{bone} twist {degrees}"] = {"min_area_ratio": float(ratio.min()), "triangles": int(len(tri))}
        pb.rotation_euler = (0.0, 0.0, 0.0)
        bpy.context.view_layer.update()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
