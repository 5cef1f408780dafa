# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent check of engine findings: what three.js really draws against what Blender shows.

    .venv/bin/python tests/corpus/triage/engine_check.py OUT.json FILE [FILE ...]

For a .blend or .fbx: every deform bone is turned (45 deg about its X axis, 30 deg about Z)
and keyed as an action of its own; Blender's own glTF exporter (defaults) writes the file;
three.js (tests/engines/threejs_positions.mjs, the real GLTFLoader + SkinnedMesh) draws that
clip; each drawn vertex is paired with the Blender vertex at its rest position and compared
with Blender's evaluated mesh at the same pose.  The exported weights' sums are read back too.

For a glTF file: three.js draws the file itself at its first clip (times 0 and half the
clip), Blender imports it (defaults) and plays the same clip; with no pairing to trust, the
distance is measured from each drawn vertex to the nearest vertex Blender shows (a lower
bound of the per-vertex distance, both ways).

Distances are in world units and as a fraction of the skinned meshes' size.  No skin_audit
code is used.
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.corpus.triage.common import REPO, load, size_of, skinned, world_positions, write_json  # noqa: E402

ENGINES = REPO / "tests" / "engines"
CLIP = "triage_pose"


def three(path: Path, *args: str) -> dict:
    done = subprocess.run(["node", str(ENGINES / "threejs_positions.mjs"), str(path), *args], cwd=ENGINES,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout)


def yup_to_zup(p: np.ndarray) -> np.ndarray:
    return np.column_stack([p[:, 0], -p[:, 2], p[:, 1]])


def read_gltf(path: Path) -> tuple[dict, list[bytes]]:
    """The JSON and the buffers of a .gltf with separate .bin files or a .glb (own reader)."""
    raw = path.read_bytes()
    if raw[:4] == b"glTF":
        n = struct.unpack("<I", raw[12:16])[0]
        js = json.loads(raw[20:20 + n])
        bins = [raw[20 + n + 8:]]
        return js, bins
    js = json.loads(raw)
    return js, [(path.parent / b["uri"]).read_bytes() for b in js.get("buffers", [])]


def accessor(js: dict, bins: list[bytes], i: int) -> np.ndarray:
    a = js["accessors"][i]
    bv = js["bufferViews"][a["bufferView"]]
    comps = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}[a["type"]]
    dtype = {5126: np.float32, 5123: np.uint16, 5121: np.uint8, 5125: np.uint32}[a["componentType"]]
    item = np.dtype(dtype).itemsize * comps
    stride = bv.get("byteStride", item)
    start = bv.get("byteOffset", 0) + a.get("byteOffset", 0)
    buf = bins[bv.get("buffer", 0)]
    rows = [np.frombuffer(buf, dtype, comps, start + k * stride) for k in range(a["count"])]
    out = np.array(rows, dtype=np.float64)
    if a.get("normalized"):
        out /= np.iinfo(dtype).max
    return out


def pose_all(bpy, arm) -> None:
    """Key a 45-deg X / 30-deg Z turn of every deform bone at frames 1 and 2, as its own action."""
    arm.animation_data_create()
    action = bpy.data.actions.new(CLIP)
    arm.animation_data.action = action
    for track in list(arm.animation_data.nla_tracks):
        arm.animation_data.nla_tracks.remove(track)
    for pb in arm.pose.bones:
        pb.rotation_mode = "XYZ"
        pb.location = (0, 0, 0)
        pb.scale = (1, 1, 1)
        pb.rotation_euler = (math.radians(45), 0, math.radians(30)) if pb.bone.use_deform else (0, 0, 0)
        for frame in (1, 2):
            for prop in ("rotation_euler", "location", "scale"):
                pb.keyframe_insert(prop, frame=frame)


def rest_frames(obj) -> list[np.ndarray]:
    """The mesh's rest vertices in its own frame, in world space and in its armature's frame."""
    co = np.array([v.co[:] for v in obj.data.vertices])
    mw = np.array(obj.matrix_world)
    world = co @ mw[:3, :3].T + mw[:3, 3]
    arm = next(m.object for m in obj.modifiers if m.type == "ARMATURE")
    ai = np.linalg.inv(np.array(arm.matrix_world))
    return [co, world, world @ ai[:3, :3].T + ai[:3, 3]]


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    """Worst nearest distance from each point of a to b, and the nearest index."""
    idx = np.empty(len(a), dtype=int)
    dist = np.empty(len(a))
    for s in range(0, len(a), 256):
        d = np.linalg.norm(a[s:s + 256, None, :] - b[None, :, :], axis=2)
        idx[s:s + 256] = d.argmin(axis=1)
        dist[s:s + 256] = d[np.arange(len(d)), idx[s:s + 256]]
    return float(dist.max()), idx


def export_path(bpy, path: Path, tmp: Path) -> dict:
    """Blender + its exporter + three.js at one pose, per mesh."""
    load(bpy, path)
    meshes = skinned(bpy)
    arms = {m.modifiers[[x.type for x in m.modifiers].index("ARMATURE")].object for m in meshes}
    for arm in arms:
        pose_all(bpy, arm)
    bpy.context.scene.frame_set(1)
    out = tmp / "export.gltf"
    bpy.ops.export_scene.gltf(filepath=str(out), export_format="GLTF_SEPARATE")
    blender = {m.name: (world_positions(bpy, m, evaluated=True), rest_frames(m)) for m in meshes}
    size = size_of(np.concatenate([b[0] for b in blender.values()]))
    drawn = three(out, "--clip", CLIP, "--times", "0")
    js, bins = read_gltf(out)
    result: dict = {"size": size, "meshes": {}}
    for m in drawn["meshes"]:
        node = js["nodes"][m["node"]]
        name = node.get("name")
        if name not in blender:
            continue
        prim = js["meshes"][m["mesh"]]["primitives"][m["primitive"]]
        rest = yup_to_zup(accessor(js, bins, prim["attributes"]["POSITION"]))
        posed_b, frames = blender[name]
        # The exporter writes a skinned mesh in its own, the armature's or the world's frame:
        # pair in whichever frame puts every exported vertex on a Blender vertex.
        pairing, match = min((_pair(rest, f) for f in frames), key=lambda pm: pm[0])
        three_pos = yup_to_zup(np.asarray(m["positions"][0]))
        dist = np.linalg.norm(three_pos - posed_b[match], axis=1)
        w = accessor(js, bins, prim["attributes"]["WEIGHTS_0"])
        entry = result["meshes"].setdefault(name, {"max": 0.0, "pairing": 0.0, "exported_sum_error": 0.0,
                                                   "vertices_over": set()})
        entry["max"] = max(entry["max"], float(dist.max()))
        entry["pairing"] = max(entry["pairing"], pairing)
        entry["exported_sum_error"] = max(entry["exported_sum_error"], float(np.abs(w.sum(axis=1) - 1).max()))
        entry["vertices_over"] |= set(match[dist > 1e-3 * size].tolist())
    for e in result["meshes"].values():
        e["relative"] = e["max"] / size if size else 0.0
        e["vertices_over"] = len(e["vertices_over"])
    return result


def file_path(bpy, path: Path) -> dict:
    """three.js on the glTF file itself against Blender's import, nearest-vertex distances."""
    load(bpy, path)
    meshes = skinned(bpy)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    first = three(path, "--times", "0")
    times = [0.0] if not first.get("duration") else [0.0, first["duration"] / 2]
    drawn = three(path, "--times", ",".join(map(str, times)))
    result: dict = {"times": times, "by_time": []}
    for k, t in enumerate(times):
        frame = t * fps + bpy.context.scene.frame_start
        bpy.context.scene.frame_set(int(math.floor(frame)), subframe=frame - math.floor(frame))
        shown = np.concatenate([world_positions(bpy, m) for m in meshes])
        pts = np.concatenate([yup_to_zup(np.asarray(m["positions"][k])) for m in drawn["meshes"]])
        size = size_of(shown)
        a = _nearest(pts, shown)
        b = _nearest(shown, pts)
        result["by_time"].append({"time": t, "size": size, "three_to_blender": float(a.max()),
                                  "blender_to_three": float(b.max()), "relative": float(max(a.max(), b.max()) / size)})
    return result


def _nearest(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([_pair(a[s:s + 256], b)[0] for s in range(0, len(a), 256)]) if len(a) else np.zeros(0)


def main(argv: list[str]) -> None:
    import bpy

    out_path, files = Path(argv[0]), [Path(f) for f in argv[1:]]
    results = json.loads(out_path.read_text()) if out_path.exists() else {}
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                if f.suffix.lower() in (".glb", ".gltf"):
                    results[str(f)] = {"mode": "file", **file_path(bpy, REPO / f)}
                else:
                    results[str(f)] = {"mode": "export", **export_path(bpy, REPO / f, Path(tmp))}
            except Exception as exc:  # a file one path cannot take is recorded, the others go on
                results[str(f)] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        print(f, json.dumps(results[str(f)])[:300], flush=True)
        write_json(out_path, results)


if __name__ == "__main__":
    main(sys.argv[1:])
