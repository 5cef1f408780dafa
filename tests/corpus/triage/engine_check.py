# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent check of engine findings: what three.js really draws against what Blender shows.

    .venv/bin/python tests/corpus/triage/engine_check.py OUT.json FILE [FILE ...]

For a .blend or .fbx: every deform bone is turned (45 deg about its X axis, 30 deg about Z)
and keyed as an action of its own; Blender's own glTF exporter (defaults) writes the file;
three.js (tests/engines/threejs_positions.mjs, the real GLTFLoader + SkinnedMesh) draws that
clip; each drawn vertex is paired with the Blender vertex at its rest position and compared
with Blender's evaluated mesh at the same pose.  The exported weights' sums are read back too.

For a glTF file: a copy without animations (and images) is drawn by three.js and imported
by Blender (defaults), so both show the pose the file's nodes hold; meshes whose node name
and vertex count match are compared vertex by vertex, and all of them by the distance from
each drawn vertex to the nearest vertex Blender shows (a lower bound, both ways).

Distances are in world units and as a fraction of the skinned meshes' size.  No skin_audit
code is used.
"""

from __future__ import annotations

import base64
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

    def data(uri: str) -> bytes:
        if uri.startswith("data:"):
            return base64.b64decode(uri.split(",", 1)[1])
        return (path.parent / uri).read_bytes()
    return js, [data(b["uri"]) for b in js.get("buffers", [])]


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
    # One clip holding every armature's action (a file may hold several armatures).
    bpy.ops.export_scene.gltf(filepath=str(out), export_format="GLTF_SEPARATE", export_animation_mode="ACTIVE_ACTIONS",
                              export_materials="NONE", export_image_format="NONE")
    blender = {m.name: (world_positions(bpy, m, evaluated=True), rest_frames(m)) for m in meshes}
    size = size_of(np.concatenate([b[0] for b in blender.values()]))
    drawn = three(out, "--clip", "0", "--times", "0")
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
    for m in meshes:
        if m.name not in result["meshes"]:  # the exporter wrote no primitive (points, no faces)
            result["meshes"][m.name] = closed_form(m, blender[m.name][0], size)
    for e in result["meshes"].values():
        e["relative"] = e["max"] / size if size else 0.0
        e["vertices_over"] = len(e["vertices_over"]) if isinstance(e["vertices_over"], set) else e["vertices_over"]
    return result


def closed_form(obj, posed_blender: np.ndarray, size: float) -> dict:
    """What three.js would draw from Blender's exporter (its 4 largest deform weights,
    normalised; linear blend of the bones' skinning matrices), in numpy, against Blender."""
    from tests.corpus.triage.common import deform_columns, own_weights

    arm = next(x.object for x in obj.modifiers if x.type == "ARMATURE")
    names, w = own_weights(obj)
    cols = deform_columns(obj, names)
    aw = np.array(arm.matrix_world)
    mats = []
    for c in cols:
        pb = arm.pose.bones[names[c]]
        mats.append(aw @ np.array(pb.matrix) @ np.linalg.inv(np.array(pb.bone.matrix_local)) @ np.linalg.inv(aw))
    mats = np.array(mats)
    d = w[:, cols]
    keep = np.argsort(-d, axis=1)[:, :4]
    top = np.zeros_like(d)
    np.put_along_axis(top, keep, np.take_along_axis(d, keep, axis=1), axis=1)
    top /= np.where(top.sum(axis=1, keepdims=True) > 0, top.sum(axis=1, keepdims=True), 1)
    co = np.array([v.co[:] for v in obj.data.vertices])
    mw = np.array(obj.matrix_world)
    rest = np.c_[co @ mw[:3, :3].T + mw[:3, 3], np.ones(len(co))]
    blend = np.einsum("vb,bij->vij", top, mats)  # per-vertex blended matrix
    three_pos = np.einsum("vij,vj->vi", blend, rest)[:, :3]
    dist = np.linalg.norm(three_pos - posed_blender, axis=1)
    return {"max": float(dist.max()), "pairing": 0.0, "exported_sum_error": None,
            "mode": "closed form (no primitive exported)", "vertices_over": int((dist > 1e-3 * size).sum())}


def static_copy(path: Path, tmp: Path) -> Path:
    """The glTF without its animations, images and materials (own JSON edit): both programs then
    draw the pose the file's nodes hold, with the file's own skins."""
    js, bins = read_gltf(path)
    for key in ("animations", "images", "textures", "samplers", "materials"):
        js.pop(key, None)
    for mesh in js.get("meshes", []):
        for prim in mesh["primitives"]:
            prim.pop("material", None)
    for i, data in enumerate(bins):
        (tmp / f"buffer{i}.bin").write_bytes(data)
        js["buffers"][i] = {"byteLength": js["buffers"][i]["byteLength"], "uri": f"buffer{i}.bin"}
    for key in ("extensionsUsed", "extensionsRequired"):
        if key in js:
            js[key] = [e for e in js[key] if e not in ("KHR_materials_volume", "KHR_texture_transform")]
    out = tmp / "static.gltf"
    out.write_text(json.dumps(js))
    return out


def pair_drawn(js: dict, drawn: dict, shown: dict, k: int) -> dict[str, float]:
    """Per Blender object: the largest distance to the vertices three.js draws for it at time k.
    Blender names the objects of nodes (or meshes) sharing a name 'name', 'name.001', ... in
    node order and keeps each primitive's vertex order; primitives past the first are skipped."""
    def split(n: str) -> tuple[str, int]:
        head, _, tail = n.rpartition(".")
        return (head, int(tail)) if head and tail.isdigit() else (n, -1)
    by_base: dict[str, list[str]] = {}
    for n in sorted(shown, key=split):
        by_base.setdefault(split(n)[0], []).append(n)
    taken: dict[str, int] = {}
    out: dict[str, float] = {}
    for m in sorted(drawn["meshes"], key=lambda m: (m["node"] is None, m["node"] or 0, m["primitive"])):
        if m["primitive"] != 0 or m["node"] is None:
            continue
        node = js["nodes"][m["node"]]
        base = node.get("name") or js["meshes"][m["mesh"]].get("name")
        k_name = taken.get(base, 0)
        taken[base] = k_name + 1
        names = by_base.get(base, [])
        name = names[k_name] if k_name < len(names) else None
        pts = yup_to_zup(np.asarray(m["positions"][k]))
        if name in shown and len(shown[name]) == len(pts):
            out[name] = float(np.linalg.norm(pts - shown[name], axis=1).max())
    return out


def animated_path(bpy, path: Path) -> dict:
    """The file as it is (animations kept): Blender at the scene's current frame against
    three.js at glTF time 0 and at time frame / fps (the time the audit compares at), per
    paired mesh."""
    load(bpy, path)
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    frame = scene.frame_current
    shown = {m.name: world_positions(bpy, m) for m in skinned(bpy)}
    times = [0.0, frame / fps]
    drawn = three(path, "--times", ",".join(map(str, times)))
    js, _ = read_gltf(path)
    size = size_of(np.concatenate(list(shown.values())))
    by_time = {}
    for k, t in enumerate(times):
        d = pair_drawn(js, drawn, shown, k)
        by_time[f"{t:.6g}"] = {"paired": len(d), "max": max(d.values(), default=None),
                               "relative": (max(d.values()) / size) if d else None}
        if k == 1:
            at_frame = {n: {"max": v, "relative": v / size} for n, v in d.items()}
    return {"frame": frame, "fps": fps, "size": size, "by_time": by_time, "meshes_at_frame": at_frame}


def file_path(bpy, path: Path, tmp: Path) -> dict:
    """three.js on the glTF file (animations removed) against Blender's import of the same
    copy, per mesh where the names pair them, else nearest-vertex distances (a lower bound)."""
    static = static_copy(path, tmp)
    load(bpy, static)
    meshes = skinned(bpy)
    drawn = three(static, "--times", "0")
    shown = {m.name: world_positions(bpy, m) for m in meshes}
    size = size_of(np.concatenate(list(shown.values())))
    js, _ = read_gltf(static)
    result: dict = {"size": size, "meshes": {}}
    pts_all = []
    # Blender names the objects of nodes sharing a name 'name', 'name.001', ... in node order.
    by_base: dict[str, list[str]] = {}
    for n in sorted(shown, key=lambda n: (n.rsplit(".", 1)[0] if n.rsplit(".", 1)[-1].isdigit() else n,
                                         int(n.rsplit(".", 1)[1]) if n.rsplit(".", 1)[-1].isdigit() else -1)):
        base = n.rsplit(".", 1)[0] if n.rsplit(".", 1)[-1].isdigit() else n
        by_base.setdefault(base, []).append(n)
    taken: dict[str, int] = {}
    for m in sorted(drawn["meshes"], key=lambda m: (m["node"] is None, m["node"] or 0, m["primitive"])):
        pts = yup_to_zup(np.asarray(m["positions"][0]))
        pts_all.append(pts)
        node = js["nodes"][m["node"]] if m["node"] is not None else {}
        base = node.get("name") or js["meshes"][m["mesh"]].get("name") if m["mesh"] is not None else None
        names = by_base.get(base, [])
        k = taken.get(base, 0)
        taken[base] = k + 1
        name = names[k] if k < len(names) and m["primitive"] == 0 else None
        if name in shown and len(shown[name]) == len(pts):
            d = float(np.linalg.norm(pts - shown[name], axis=1).max())
            e = result["meshes"].setdefault(name, {"max": 0.0, "paired_by": "name and vertex order"})
            e["max"] = max(e["max"], d)
    every = np.concatenate(pts_all)
    blender_all = np.concatenate(list(shown.values()))
    a, b = _nearest(every, blender_all), _nearest(blender_all, every)
    result["nearest_max"] = float(max(a.max(), b.max()))
    result["relative"] = result["nearest_max"] / size
    for e in result["meshes"].values():
        e["relative"] = e["max"] / size
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
                    results[str(f)] = {"mode": "file", **file_path(bpy, REPO / f, Path(tmp)),
                                       "animated": animated_path(bpy, REPO / f)}
                else:
                    results[str(f)] = {"mode": "export", **export_path(bpy, REPO / f, Path(tmp))}
            except Exception as exc:  # a file one path cannot take is recorded, the others go on
                results[str(f)] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        print(f, json.dumps(results[str(f)])[:300], flush=True)
        write_json(out_path, results)


if __name__ == "__main__":
    main(sys.argv[1:])
