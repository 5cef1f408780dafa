# SPDX-License-Identifier: GPL-3.0-or-later
"""Sample a glTF animation at a time (3.11 and Appendix C of the glTF 2.0 specification).

Two rules for rotations, because runtimes differ on data the specification forbids
(non-unit keyframe quaternions):

``"spec"``
    What the specification describes.  Rotation outputs must be unit quaternions (3.11),
    so stored keyframes are normalised first; LINEAR is Appendix C's slerp on the shorter
    arc (``a = acos|d|``, the second key negated when ``d < 0``); CUBICSPLINE is the
    Hermite spline on the components, normalised after (Appendix C); STEP holds the key.
``"threejs"``
    three.js r187: keyframes as stored; LINEAR is ``Quaternion.slerpFlat`` (shorter arc,
    plain slerp when ``d < 0.9995``, else lerp then normalise); CUBICSPLINE is
    ``GLTFCubicSplineQuaternionInterpolant`` (Hermite then normalise); outside the key
    range and for STEP the stored key, unnormalised.
``"babylon"``
    Babylon.js 9.35: as ``"threejs"`` except LINEAR, which is ``Quaternion.Slerp``
    (shorter arc, plain lerp when ``|d| > 0.999999``, never normalised; see
    ``engines/babylon.py``).

Translation and scale are the same under all three: lerp, Hermite or step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from .document import GltfDocument, read_accessor
from .scene import NodeTransforms

InterpolationRule = Literal["spec", "threejs", "babylon"]
_PATH_SIZES = {"translation": 3, "rotation": 4, "scale": 3}
#: Below this ``1 - |d|`` the spec slerp's ``sin(a)`` is too small to divide by; the
#: limit of slerp there is the normalised lerp (error ~ a^2, below float32 resolution).
SLERP_LERP_LIMIT = 1e-10


@dataclass(frozen=True)
class Sampler:
    """One animation sampler: key times and output values (3 per key for CUBICSPLINE)."""

    times: NDArray[np.float64]  # (K,)
    values: NDArray[np.float64]  # (K, C) or (3K, C): in-tangent, value, out-tangent per key
    interpolation: str


def find_animation(doc: GltfDocument, clip: str | int | None) -> int | None:
    """Index of the animation named ``clip`` (or with that index); the first when None.

    Returns None when the file has no animation and ``clip`` is None.
    """
    anims = doc.items("animations")
    if clip is None:
        return 0 if anims else None
    if isinstance(clip, int) or (
        isinstance(clip, str) and clip.isdigit() and not any(a.get("name") == clip for a in anims)
    ):
        index = int(clip)
        if not 0 <= index < len(anims):
            raise doc.fail("animations", f"clip index {index} is out of range; the file has {len(anims)} animations")
        return index
    names = [a.get("name") for a in anims]
    if clip not in names:
        listed = ", ".join(repr(n) if n is not None else f"#{i}" for i, n in enumerate(names)) or "none"
        raise doc.fail("animations", f"no animation named {clip!r}; the file has: {listed}")
    return names.index(clip)


def read_sampler(doc: GltfDocument, anim: int, index: int,
                 accessors: dict[int, NDArray[np.float64]] | None = None) -> Sampler:
    """Read and check one sampler of animation ``anim``; ``accessors``: the accessors already read, by
    index (the samplers of a clip often share one input of key times), added to as read."""

    def read(accessor: Any, where: str) -> NDArray[np.float64]:
        if accessors is None or not isinstance(accessor, int):
            return read_accessor(doc, accessor, where)
        if accessor not in accessors:
            accessors[accessor] = read_accessor(doc, accessor, where)
        return accessors[accessor]

    a = doc.item("animations", anim, "animation")
    where = f"animation {anim} sampler {index}"
    samplers = a.get("samplers", [])
    if not 0 <= index < len(samplers):
        raise doc.fail(where, f"out of range ({len(samplers)} samplers)")
    s = samplers[index]
    interpolation = s.get("interpolation", "LINEAR")
    if interpolation not in ("LINEAR", "STEP", "CUBICSPLINE"):
        raise doc.fail(where, f"interpolation {interpolation!r} is not LINEAR, STEP or CUBICSPLINE")
    times = read(s.get("input"), where + " input")
    if times.shape[1] != 1:
        raise doc.fail(where, "input must be a SCALAR accessor of key times")
    t = times[:, 0]
    if len(t) == 0:
        raise doc.fail(where, "has no keyframes")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise doc.fail(where, "key times must be finite and strictly increasing (3.11)")
    values = read(s.get("output"), where + " output")
    per_key = 3 if interpolation == "CUBICSPLINE" else 1
    if len(values) != per_key * len(t):
        raise doc.fail(where, f"output has {len(values)} elements for {len(t)} keys ({per_key} per key expected)")
    return Sampler(times=t, values=values, interpolation=interpolation)


def _slerp_spec(q0: NDArray[np.float64], q1: NDArray[np.float64], u: float) -> NDArray[np.float64]:
    d = float(q0 @ q1)
    if d < 0:  # Appendix C: s = d / |d| takes the shorter arc.
        q1, d = -q1, -d
    if 1.0 - d < SLERP_LERP_LIMIT:
        v = (1 - u) * q0 + u * q1
    else:
        a = np.arccos(min(d, 1.0))
        v = (np.sin(a * (1 - u)) * q0 + np.sin(a * u) * q1) / np.sin(a)
    out: NDArray[np.float64] = v / np.linalg.norm(v)
    return out


def _slerp_threejs(q0: NDArray[np.float64], q1: NDArray[np.float64], u: float) -> NDArray[np.float64]:
    # Quaternion.slerpFlat (three.js r187), line by line: no normalisation of the inputs.
    if np.array_equal(q0, q1):
        return q0.copy()
    d = float(q0 @ q1)
    if d < 0:
        q1, d = -q1, -d
    s = 1 - u
    if d < 0.9995:
        theta = float(np.arccos(d))
        sin = float(np.sin(theta))
        s, u = float(np.sin(s * theta)) / sin, float(np.sin(u * theta)) / sin
        return s * q0 + u * q1
    v = s * q0 + u * q1
    out: NDArray[np.float64] = v / np.sqrt(v @ v)
    return out


def _slerp_babylon(q0: NDArray[np.float64], q1: NDArray[np.float64], u: float) -> NDArray[np.float64]:
    # Quaternion.SlerpToRef (Babylon.js 9.35, Maths/math.vector.pure.js 5098-5122): nothing normalised.
    d = float(q0 @ q1)
    flip = d < 0
    d = abs(d)
    if d > 0.999999:
        a, b = 1.0 - u, u
    else:
        angle = float(np.arccos(d))
        a, b = float(np.sin((1.0 - u) * angle)) / float(np.sin(angle)), float(np.sin(u * angle)) / float(np.sin(angle))
    out: NDArray[np.float64] = a * q0 + (-b if flip else b) * q1
    return out


def sample(sampler: Sampler, t: float, path: str, rule: InterpolationRule = "spec") -> NDArray[np.float64]:
    """The sampler's value at time ``t`` (clamped to the first or last key outside the range).

    Parameters
    ----------
    sampler : Sampler
    t : float
        Seconds.
    path : str
        ``translation``, ``rotation``, ``scale`` or ``weights``.
    rule : InterpolationRule

    Returns
    -------
    (C,) float64
    """
    times, values = sampler.times, sampler.values
    cubic = sampler.interpolation == "CUBICSPLINE"
    rotation = path == "rotation"

    def key(k: int) -> NDArray[np.float64]:
        v = values[3 * k + 1] if cubic else values[k]
        if rotation and rule == "spec":
            v = v / np.linalg.norm(v)
        return np.array(v, dtype=np.float64)

    # The interval with t_k <= t < t_k+1 (three.js's Interpolant and the spec agree).
    if t < times[0]:
        return key(0)
    if t >= times[-1]:
        return key(len(times) - 1)
    k = int(np.searchsorted(times, t, side="right")) - 1
    t0, t1 = float(times[k]), float(times[k + 1])
    if sampler.interpolation == "STEP":
        return key(k)
    u = (t - t0) / (t1 - t0)
    if cubic:
        # Appendix C: p(u) = (2u^3 - 3u^2 + 1) v_k + td (u^3 - 2u^2 + u) b_k
        #                  + (-2u^3 + 3u^2) v_k+1 + td (u^3 - u^2) a_k+1
        td = t1 - t0
        v_k, b_k = values[3 * k + 1], values[3 * k + 2]
        a_k1, v_k1 = values[3 * (k + 1)], values[3 * (k + 1) + 1]
        u2, u3 = u * u, u * u * u
        v = (
            (2 * u3 - 3 * u2 + 1) * v_k
            + td * (u3 - 2 * u2 + u) * b_k
            + (-2 * u3 + 3 * u2) * v_k1
            + td * (u3 - u2) * a_k1
        )
        if rotation:
            v = v / np.linalg.norm(v)
        return np.asarray(v, dtype=np.float64)
    if rotation:
        slerp = {"spec": _slerp_spec, "threejs": _slerp_threejs, "babylon": _slerp_babylon}[rule]
        return slerp(key(k), key(k + 1), u)
    out: NDArray[np.float64] = (1 - u) * values[k] + u * values[k + 1]
    return out


def animated_transforms(
    doc: GltfDocument, rest: NodeTransforms, anim: int | None, t: float, rule: InterpolationRule = "spec"
) -> NodeTransforms:
    """Node transforms with animation ``anim`` applied at time ``t`` (rest when ``anim`` is None).

    Channels on ``weights`` (morph targets) are read and checked but not applied: the
    skinning audit does not deform morph targets.
    """
    if anim is None:
        return rest
    channels: dict[str, dict[int, NDArray[np.float64]]] = {"translation": {}, "rotation": {}, "scale": {}}
    for c in clip_channels(doc, anim, rest):
        channels[c.path][c.node] = sample(c.sampler, t, c.path, rule)
    return rest.with_channels(channels["translation"], channels["rotation"], channels["scale"])


def _slerp_many(q0: NDArray[np.float64], q1: NDArray[np.float64], u: NDArray[np.float64],
                rule: InterpolationRule) -> NDArray[np.float64]:
    """``_slerp_spec``, ``_slerp_threejs`` or ``_slerp_babylon`` of (T, 4) key pairs at (T,) ``u``, row by row."""
    d = np.einsum("ti,ti->t", q0, q1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if rule == "babylon":
            flip = d < 0
            ad = np.abs(d)
            near = ad > 0.999999
            angle = np.arccos(np.clip(ad, -1.0, 1.0))
            sin = np.sin(angle)
            a = np.where(near, 1.0 - u, np.sin((1.0 - u) * angle) / np.where(near, 1.0, sin))
            b = np.where(near, u, np.sin(u * angle) / np.where(near, 1.0, sin))
            out: NDArray[np.float64] = a[:, None] * q0 + np.where(flip, -b, b)[:, None] * q1
            return out
        same = np.all(q0 == q1, axis=1)
        q1 = np.where((d < 0)[:, None], -q1, q1)
        d = np.abs(d)
        lerp = (1 - u)[:, None] * q0 + u[:, None] * q1
        if rule == "spec":
            near = 1.0 - d < SLERP_LERP_LIMIT
            a = np.arccos(np.minimum(d, 1.0))
            sin = np.where(near, 1.0, np.sin(a))
            slerp = (np.sin(a * (1 - u))[:, None] * q0 + np.sin(a * u)[:, None] * q1) / sin[:, None]
            v = np.where(near[:, None], lerp, slerp)
            return v / np.linalg.norm(v, axis=1, keepdims=True)  # type: ignore[no-any-return]
        # three.js Quaternion.slerpFlat: plain slerp below 0.9995, else lerp then normalise; equal keys kept.
        near = d >= 0.9995
        theta = np.arccos(np.where(near, 1.0, d))
        sin = np.where(near, 1.0, np.sin(theta))
        slerp = (np.sin((1 - u) * theta) / sin)[:, None] * q0 + (np.sin(u * theta) / sin)[:, None] * q1
        normed = lerp / np.sqrt(np.einsum("ti,ti->t", lerp, lerp))[:, None]
        v = np.where(near[:, None], normed, slerp)
        return np.where(same[:, None], q0, v)  # type: ignore[no-any-return]


def sample_many(sampler: Sampler, times: NDArray[np.float64], path: str,
                rule: InterpolationRule = "spec") -> NDArray[np.float64]:
    """(T, C) ``sample`` at every time of ``times`` at once (the same arithmetic, row by row)."""
    return sample_stacked(sampler.times, np.asarray(sampler.values)[:, None, :], sampler.interpolation, times,
                          path, rule)[:, 0]


def sample_stacked(key_times: NDArray[np.float64], values: NDArray[np.float64], interpolation: str,
                   times: NDArray[np.float64], path: str, rule: InterpolationRule = "spec") -> NDArray[np.float64]:
    """(T, n, C) ``sample_many`` of n samplers sharing ``key_times`` (K,) and ``interpolation`` at once:
    ``values`` (K, n, C), or (3 K, n, C) for CUBICSPLINE, each sampler's outputs side by side."""
    t = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    cubic = interpolation == "CUBICSPLINE"
    rotation = path == "rotation"
    keys = values[1::3] if cubic else values
    if rotation and rule == "spec":
        keys = keys / np.linalg.norm(keys, axis=2, keepdims=True)
    last = len(key_times) - 1
    k = np.clip(np.searchsorted(key_times, t, side="right") - 1, 0, last)
    out = keys[k].copy()  # before the first key, after the last, and STEP: the key
    inside = (t >= key_times[0]) & (t < key_times[-1])
    if interpolation == "STEP" or last == 0 or not inside.any():
        return out
    k = k[inside]
    t0, t1 = key_times[k], key_times[k + 1]
    u = (t[inside] - t0) / (t1 - t0)
    if cubic:
        td = (t1 - t0)[:, None, None]
        v_k, b_k = values[3 * k + 1], values[3 * k + 2]
        a_k1, v_k1 = values[3 * (k + 1)], values[3 * (k + 1) + 1]
        u1 = u[:, None, None]
        u2, u3 = u1 * u1, u1 * u1 * u1
        v = ((2 * u3 - 3 * u2 + 1) * v_k + td * (u3 - 2 * u2 + u1) * b_k + (-2 * u3 + 3 * u2) * v_k1
             + td * (u3 - u2) * a_k1)
        if rotation:
            v = v / np.linalg.norm(v, axis=2, keepdims=True)
        out[inside] = v
    elif rotation:
        n = keys.shape[1]
        # Every sampler's key pair at every time as rows of one slerp.
        out[inside] = _slerp_many(keys[k].reshape(-1, 4), keys[k + 1].reshape(-1, 4), np.repeat(u, n),
                                  rule).reshape(len(k), n, 4)
    else:
        u1 = u[:, None, None]
        out[inside] = (1 - u1) * values[k] + u1 * values[k + 1]
    return out


@dataclass(frozen=True)
class ClipChannel:
    node: int
    path: str
    sampler: Sampler


def clip_channels(doc: GltfDocument, anim: int, rest: NodeTransforms) -> tuple[ClipChannel, ...]:
    """The node channels of animation ``anim`` with their samplers, read and checked once
    (morph-weight channels left out); ``animated_transforms`` samples them at one time."""
    a = doc.item("animations", anim, "animation")
    out = []
    accessors: dict[int, NDArray[np.float64]] = {}  # read once, shared by the samplers naming them
    for c, ch in enumerate(a.get("channels", [])):
        where = f"animation {anim} channel {c}"
        target = ch.get("target", {})
        path = target.get("path")
        if path == "weights" or "node" not in target:
            continue
        node = target["node"]
        doc.item("nodes", node, where)
        if path not in _PATH_SIZES:
            raise doc.fail(where, f"target path {path!r} is not translation, rotation, scale or weights")
        if rest.has_matrix[node]:
            raise doc.fail(where, f"animates node {node}, which has a matrix (3.5.2 forbids it)")
        samplers = a.get("samplers", [])
        si = ch.get("sampler")
        if not isinstance(si, int) or not 0 <= si < len(samplers):
            raise doc.fail(where, f"sampler {si!r} is out of range ({len(samplers)} samplers)")
        sampler = read_sampler(doc, anim, si, accessors)
        if sampler.values.shape[1] != _PATH_SIZES[path]:
            raise doc.fail(
                where, f"{path} output has {sampler.values.shape[1]} components, expected {_PATH_SIZES[path]}"
            )
        out.append(ClipChannel(int(node), str(path), sampler))
    return tuple(out)
