# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent verifier of a twist scene JSON file.

Needs only the JSON and numpy.  It deliberately does not call the skinning
core: matrix products, LBS and DQS are recomputed here with plain per-vertex
arithmetic, so a bug in the core cannot vouch for itself.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..errors import InputError, VerificationError

#: Longest integer a scene file may hold; longer ones are refused while parsing.
MAX_INTEGER_DIGITS = 30

#: Relative tolerances of the verifier (documented in tolerances.py terms).
FLOAT64 = tolerances.CLOSED_FORM_FLOAT64
FLOAT32 = tolerances.FLOAT32_RELATIVE
#: Stored numpy positions against the verifier's own float64 recomputation
#: (different summation order, so a little above FLOAT64).
NUMPY_RECOMPUTE = tolerances.VERIFY_NUMPY_RELATIVE


@dataclass(frozen=True)
class VerifyResult:
    poses: int
    vertices: int
    max_product_error: float
    max_numpy_error: float
    max_blender_error: float
    max_radius_error: float


def _qmul(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float, float, float]:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)


def _quat_from_rotation(m: NDArray[np.float64]) -> tuple[float, float, float, float]:
    """Unit quaternion of a rotation matrix (w >= 0), branch on the largest component."""
    w2 = max(0.0, 1.0 + m[0, 0] + m[1, 1] + m[2, 2]) / 4.0
    x2 = max(0.0, 1.0 + m[0, 0] - m[1, 1] - m[2, 2]) / 4.0
    y2 = max(0.0, 1.0 - m[0, 0] + m[1, 1] - m[2, 2]) / 4.0
    z2 = max(0.0, 1.0 - m[0, 0] - m[1, 1] + m[2, 2]) / 4.0
    big = max(w2, x2, y2, z2)
    if big == w2:
        w = math.sqrt(w2)
        q = (w, (m[2, 1] - m[1, 2]) / (4 * w), (m[0, 2] - m[2, 0]) / (4 * w), (m[1, 0] - m[0, 1]) / (4 * w))
    elif big == x2:
        x = math.sqrt(x2)
        q = ((m[2, 1] - m[1, 2]) / (4 * x), x, (m[0, 1] + m[1, 0]) / (4 * x), (m[0, 2] + m[2, 0]) / (4 * x))
    elif big == y2:
        y = math.sqrt(y2)
        q = ((m[0, 2] - m[2, 0]) / (4 * y), (m[0, 1] + m[1, 0]) / (4 * y), y, (m[1, 2] + m[2, 1]) / (4 * y))
    else:
        z = math.sqrt(z2)
        q = ((m[1, 0] - m[0, 1]) / (4 * z), (m[0, 2] + m[2, 0]) / (4 * z), (m[1, 2] + m[2, 1]) / (4 * z), z)
    n = math.sqrt(sum(c * c for c in q))
    return (q[0] / n, q[1] / n, q[2] / n, q[3] / n)


def _dqs_vertex(
    p: NDArray[np.float64], joints: list[int], weights: list[float], skin: NDArray[np.float64]
) -> NDArray[np.float64]:
    """One vertex by dual quaternion blending, written out term by term."""
    heaviest = joints[int(np.argmax(weights))]
    pivot = _quat_from_rotation(skin[heaviest, :3, :3])
    real = [0.0] * 4
    dual = [0.0] * 4
    for j, w in zip(joints, weights, strict=True):
        q = _quat_from_rotation(skin[j, :3, :3])
        t = (0.0, *skin[j, :3, 3])
        d = tuple(0.5 * c for c in _qmul(t, q))
        s = -1.0 if sum(a * b for a, b in zip(q, pivot, strict=True)) < 0 else 1.0
        for c in range(4):
            real[c] += s * w * q[c]
            dual[c] += s * w * d[c]
    n = math.sqrt(sum(c * c for c in real))
    real_t = tuple(c / n for c in real)
    dual_t = tuple(c / n for c in dual)
    conj = (real_t[0], -real_t[1], -real_t[2], -real_t[3])
    rotated = _qmul(_qmul(real_t, (0.0, *p)), conj)[1:]
    trans = _qmul(dual_t, conj)[1:]
    return np.array([rotated[i] + 2.0 * trans[i] for i in range(3)])


def _lbs_vertex(
    p: NDArray[np.float64], joints: list[int], weights: list[float], skin: NDArray[np.float64]
) -> NDArray[np.float64]:
    """One vertex by LBS: the weighted sum of each joint's transformed point."""
    out = np.zeros(3)
    for j, w in zip(joints, weights, strict=True):
        out += w * (skin[j, :3, :3] @ p + skin[j, :3, 3])
    return out


def load_scene(path: str | Path) -> dict[str, Any]:
    """Read a scene file, with a clear error for a missing or malformed one."""
    p = Path(path)

    def whole_number(text: str) -> int:
        # A scene's integers are indices and counts; hundreds of digits only overflow later.
        if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
            raise InputError(f"{p}: a number with {len(text.lstrip('-'))} digits is not a scene value "
                             f"(at most {MAX_INTEGER_DIGITS} digits)")
        return int(text)

    try:
        data = json.loads(p.read_text(encoding="utf-8"), parse_int=whole_number)
    except FileNotFoundError as exc:
        raise InputError(f"{p}: no such file") from exc
    except RecursionError as exc:
        raise InputError(f"{p}: arrays or objects nested too deeply to be a twist scene") from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise InputError(f"{p}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != "skin_audit.twist_scene":
        raise InputError(f"{p}: not a skin_audit twist scene (missing format 'skin_audit.twist_scene')")
    return data


def _structure_problems(
    bind_v: NDArray[np.float64],
    bind: NDArray[np.float64],
    inv: NDArray[np.float64],
    idx: list[list[int]],
    wts: list[list[float]],
    poses: list[dict[str, Any]],
) -> list[str]:
    """Shapes, finiteness and joint indices: what must hold before anything can be recomputed."""
    out: list[str] = []
    if bind_v.ndim != 2 or bind_v.shape[1:] != (3,):
        out.append(f"bind_vertices: expected shape (V, 3), got {bind_v.shape}")
    if bind.ndim != 3 or bind.shape[1:] != (4, 4) or inv.shape != bind.shape:
        out.append(f"bind matrices {bind.shape} and inverse bind matrices {inv.shape} must both be (J, 4, 4)")
    if out:
        return out
    for name, a in (("bind_vertices", bind_v), ("bind_matrices", bind), ("inverse_bind_matrices", inv)):
        if not np.isfinite(a).all():
            out.append(f"{name}: contains NaN or infinite values")
    joints, verts = len(bind), len(bind_v)
    if len(idx) != verts or len(wts) != verts:
        return out + [f"influences: {len(idx)} index rows and {len(wts)} weight rows for {verts} vertices"]
    # One list of offending vertices per kind; the message names the first and counts them all.
    bad: dict[str, list[int]] = {"slots": [], "index": [], "weight": []}
    for v, (ji, wi) in enumerate(zip(idx, wts, strict=True)):
        if not ji or len(ji) != len(wi):
            bad["slots"].append(v)
        elif not all(isinstance(j, int) and not isinstance(j, bool) and 0 <= j < joints for j in ji):
            bad["index"].append(v)
        elif not all(isinstance(w, int | float) and math.isfinite(w) for w in wi):
            bad["weight"].append(v)
    what = {"slots": "has no slots, or index and weight counts differ",
            "index": f"has a joint index outside 0..{joints - 1}",
            "weight": "has a NaN, infinite or non-numeric weight"}
    for kind, rows in bad.items():
        if rows:
            v = rows[0]
            out.append(f"vertex {v}: {what[kind]} (indices {idx[v]}, weights {wts[v]}; "
                       f"{len(rows)} vertices in all)")
    for k, pose in enumerate(poses):
        angle = pose["angle_deg"]
        if pose["method"] not in ("lbs", "dqs"):
            out.append(f"pose {k}: method {pose['method']!r} is neither 'lbs' nor 'dqs'")
        if not (isinstance(angle, int | float) and math.isfinite(angle)):
            out.append(f"pose {k}: angle_deg {angle!r} is not a finite number")
        for key, shape in (("current_world_matrices", bind.shape), ("skinning_matrices", bind.shape),
                           ("numpy_positions", bind_v.shape), ("blender_positions", bind_v.shape)):
            a = np.asarray(pose[key], dtype=np.float64)
            if a.shape != shape:
                out.append(f"pose {k}: {key} has shape {a.shape}, expected {shape}")
            elif not np.isfinite(a).all():
                out.append(f"pose {k}: {key} contains NaN or infinite values")
    return out


def verify_scene(data: dict[str, Any]) -> VerifyResult:
    """Recompute every matrix product, output vertex and ring radius; raise on any disagreement."""
    try:
        bind_v = np.array(data["mesh"]["bind_vertices"], dtype=np.float64)
        bind = np.array(data["armature"]["bind_matrices"], dtype=np.float64)
        inv = np.array(data["armature"]["inverse_bind_matrices"], dtype=np.float64)
        idx = data["influences"]["joint_indices"]
        wts = data["influences"]["weights"]
        poses = data["poses"]
        problems = _structure_problems(bind_v, bind, inv, idx, wts, poses)
    except (KeyError, TypeError, ValueError) as exc:
        raise VerificationError(f"scene is missing or has malformed data: {exc!r}") from exc
    except (OverflowError, RecursionError) as exc:
        raise InputError(f"scene has a number too large or data nested too deeply: {exc}") from exc
    if not isinstance(poses, list) or not poses or bind_v.size == 0:
        problems.append("the scene has no pose or no vertex: it proves nothing")
    if problems:
        raise VerificationError(f"{len(problems)} structural problem(s):\n  " + "\n  ".join(problems))
    size = max(float(np.ptp(bind_v, axis=0).max()), 1.0)
    for j in range(len(bind)):
        err = float(np.abs(bind[j] @ inv[j] - np.eye(4)).max())
        if not err <= FLOAT32:
            problems.append(f"bone {j}: bind @ inverse_bind differs from identity by {err:.3g}")
    bad_weights = [
        v for v, row in enumerate(wts) if not (abs(math.fsum(row) - 1.0) <= FLOAT64 and min(row) >= 0)
    ]
    if bad_weights:
        v = bad_weights[0]
        problems.append(f"vertex {v}: weights {wts[v]} are not a partition of one "
                        f"({len(bad_weights)} vertices in all)")
    worst = {"product": 0.0, "numpy": 0.0, "blender": 0.0, "radius": 0.0}
    for k, pose in enumerate(poses):
        label = f"pose {k} ({pose['method']} {pose['angle_deg']} deg)"
        current = np.array(pose["current_world_matrices"], dtype=np.float64)
        skin = np.array(pose["skinning_matrices"], dtype=np.float64)
        recomputed = np.array([current[j] @ inv[j] for j in range(len(current))])
        e = float(np.abs(recomputed - skin).max())
        worst["product"] = max(worst["product"], e)
        if not e <= FLOAT64 * size:
            problems.append(f"{label}: stored skinning matrices differ from G B^-1 by {e:.3g}")
        numpy_pos = np.array(pose["numpy_positions"], dtype=np.float64)
        blender_pos = np.array(pose["blender_positions"], dtype=np.float64)
        vertex = _dqs_vertex if pose["method"] == "dqs" else _lbs_vertex
        mine = np.array([vertex(bind_v[v], idx[v], wts[v], recomputed) for v in range(len(bind_v))])
        e_np = float(np.abs(mine - numpy_pos).max())
        e_bl = float(np.abs(mine - blender_pos).max())
        worst["numpy"] = max(worst["numpy"], e_np)
        worst["blender"] = max(worst["blender"], e_bl)
        if not e_np <= NUMPY_RECOMPUTE * size:
            v = int(np.abs(mine - numpy_pos).max(axis=1).argmax())
            problems.append(f"{label}: numpy vertex {v} is off by {e_np:.3g} from the recomputation")
        if not e_bl <= FLOAT32 * size:
            v = int(np.abs(mine - blender_pos).max(axis=1).argmax())
            problems.append(f"{label}: Blender vertex {v} is off by {e_bl:.3g} from the recomputation")
        if pose["method"] == "lbs":
            # Ring radii against r'/r = sqrt(1 - 4w(1-w) sin^2(theta/2)), with w the top bone's weight.
            # r'/r is undefined on the axis; such a vertex is still checked by its position above.
            theta = math.radians(pose["angle_deg"])
            pose_radius = 0.0
            for v in range(len(bind_v)):
                r0 = math.hypot(*bind_v[v, :2])
                if not r0 > FLOAT64 * size:
                    continue
                w = wts[v][-1]
                expected = math.sqrt(max(0.0, 1 - 4 * w * (1 - w) * math.sin(theta / 2) ** 2))
                got = math.hypot(*mine[v, :2]) / r0
                pose_radius = max(pose_radius, abs(got - expected))
            worst["radius"] = max(worst["radius"], pose_radius)
            if not pose_radius <= FLOAT32:
                problems.append(f"{label}: ring radius off the closed form by {pose_radius:.3g}")
    if problems:
        raise VerificationError(f"{len(problems)} disagreement(s):\n  " + "\n  ".join(problems))
    return VerifyResult(len(poses), len(bind_v), worst["product"], worst["numpy"], worst["blender"],
                        worst["radius"])
