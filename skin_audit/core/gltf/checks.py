# SPDX-License-Identifier: GPL-3.0-or-later
"""What a glTF file itself breaks, checked on the stored values, citing glTF-Validator codes.

Each influence check follows the Khronos glTF-Validator's ``InfluencesChecker``
(lib/src/data_access/validate_accessors.dart, 2.0.0-dev.3.10/3.11, the version pinned in
tests/engines), so both count the same things: per primitive, all ``JOINTS_n``/``WEIGHTS_n``
sets of a vertex are read in slot order; a joint past the smallest skin's last joint is
out of range and skipped; a non-zero weight on a joint already used by the vertex is a
duplicate and left out of the sum; the dequantised weights are summed in float32 and the
sum may miss 1 by 2e-7 per weight summed.  That is the specification's rule on stored
values (3.7.3.1): float weights sum to 1 as closely as float32 allows, and normalised
unsigned bytes/shorts must sum to exactly 255/65535 *before* dequantisation, so there is
no 1/255 slack per weight: a quantiser must distribute its rounding.
Findings are per primitive; ``details['validator_code']`` is the validator's code and
``details['validator_count']`` how many messages it would print for the same fault.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..findings import Finding, Severity
from .animation import read_sampler
from .document import GltfDocument
from .skin import SkinnedPrimitive, skin_joints, skinned_primitives

#: glTF-Validator: the float32 sum of the weights may miss 1 by this much per weight summed.
UNIT_SUM_THRESHOLD_PER_WEIGHT = 2e-7
#: glTF-Validator ``unitLengthThresholdVec4`` for rotation keyframes (|length - 1|).
UNIT_LENGTH_THRESHOLD_VEC4 = 0.00769
#: Listed vertices per message.
_SHOWN = 5


def _finding(
    code: str,
    severity: Severity,
    what: str,
    prim_label: str,
    vertices: NDArray[np.intp],
    validator_code: str | None,
    validator_count: int,
    extra: dict[str, Any] | None = None,
    why: str = "",
) -> Finding:
    shown = ", ".join(str(v) for v in vertices[:_SHOWN]) + (", ..." if len(vertices) > _SHOWN else "")
    details: dict[str, Any] = {
        "validator_code": validator_code,
        "validator_count": validator_count,
        "where": prim_label,
    }
    details.update(extra or {})
    message = f"{prim_label}: {len(vertices)} vertices {what} (vertices {shown})" + (f"; {why}" if why else "")
    return Finding(
        code=code,
        severity=severity,
        message=message,
        count=int(len(vertices)),
        vertices=tuple(int(v) for v in vertices),
        details=details,
    )


def _max_joint_index(doc: GltfDocument, mesh: int) -> int:
    # The validator limits joints by the smallest skin any node uses with this mesh.
    counts = [len(skin_joints(doc, n["skin"])) for n in doc.items("nodes") if n.get("mesh") == mesh and "skin" in n]
    return min(counts) - 1


def influence_checks(doc: GltfDocument, prim: SkinnedPrimitive) -> list[Finding]:
    """Influence findings of one skinned primitive (validator codes ACCESSOR_JOINTS_* and
    ACCESSOR_WEIGHTS_*), plus what Blender's importer changes.

    Returns
    -------
    list of Finding
    """
    joints = np.concatenate([s.joints for s in prim.sets], axis=1)  # (V, 4S)
    weights = np.concatenate([s.weights for s in prim.sets], axis=1)  # (V, 4S)
    n_verts, k = weights.shape
    max_joint = _max_joint_index(doc, prim.mesh)
    label = prim.label

    # 1. Slot classes, in the validator's order: out of range, then used (w != 0) or unused.
    oob = joints > max_joint
    used = ~oob & (weights != 0)
    zero_with_joint = ~oob & (weights == 0) & (joints != 0)
    duplicate = np.zeros_like(used)
    for slot in range(1, k):
        earlier = used[:, :slot] & (joints[:, :slot] == joints[:, slot : slot + 1])
        duplicate[:, slot] = used[:, slot] & earlier.any(axis=1)
    negative = used & (weights < 0)
    # 2. The float32 running sum over unique non-negative used slots, and the allowed miss.
    total = np.zeros(n_verts, dtype=np.float32)
    for slot in range(k):
        add = used[:, slot] & ~duplicate[:, slot] & (weights[:, slot] >= 0)
        total = np.where(add, (total.astype(np.float64) + weights[:, slot]).astype(np.float32), total)
    summed = (used & ~duplicate & (weights >= 0)).sum(axis=1)
    threshold = UNIT_SUM_THRESHOLD_PER_WEIGHT * summed
    off = np.abs(total.astype(np.float64) - 1.0) > threshold

    out: list[Finding] = []
    sets = len(prim.sets)

    def rows(mask: NDArray[np.bool_]) -> NDArray[np.intp]:
        return np.flatnonzero(mask.any(axis=1) if mask.ndim == 2 else mask)

    if off.any():
        v = rows(off)
        worst = float(np.max(np.abs(total[v].astype(np.float64) - 1.0)))
        extra: dict[str, Any] = {"worst_sum_error": worst}
        quantised = [st for st in prim.sets if st.weight_normalized and st.weight_component_type != 5126]
        if quantised:
            # The spec's own words for integers: the stored sum is exactly 255 or 65535.
            extra["stored_integer_sums_off"] = int(
                sum(
                    np.count_nonzero(
                        st.weights_stored.astype(np.int64).sum(axis=1)
                        != (255 if st.weight_component_type == 5121 else 65535)
                    )
                    for st in quantised
                )
            )
        out.append(
            _finding(
                "gltf-weights-not-normalised",
                "ERROR",
                "have stored weights whose sum is not 1",
                label,
                v,
                "ACCESSOR_WEIGHTS_NON_NORMALIZED",
                int(len(v) * sets),
                extra,
                "glTF 3.7.3.1 requires a linear sum of 1 (quantised weights: stored integers summing to exactly "
                "255 or 65535); "
                "engines differ on what they draw (three.js divides by the sum, the spec's LBS does not)",
            )
        )
    if oob.any():
        out.append(
            _finding(
                "gltf-joint-out-of-range",
                "ERROR",
                f"use a joint index past the skin's last joint ({max_joint})",
                label,
                rows(oob),
                "ACCESSOR_JOINTS_INDEX_OOB",
                int(oob.sum()),
                {"max_joint_index": max_joint},
                "JOINTS_n index skin.joints, not nodes (glTF 3.7.3.1); re-export the skin",
            )
        )
    if duplicate.any():
        out.append(
            _finding(
                "gltf-joint-repeated",
                "ERROR",
                "list the same joint twice with non-zero weight",
                label,
                rows(duplicate),
                "ACCESSOR_JOINTS_INDEX_DUPLICATE",
                int(duplicate.sum()),
                why="merge the repeated influences into one slot",
            )
        )
    if negative.any():
        out.append(
            _finding(
                "gltf-weight-negative",
                "ERROR",
                "have a negative weight",
                label,
                rows(negative),
                "ACCESSOR_WEIGHTS_NEGATIVE",
                int(negative.sum()),
            )
        )
    if zero_with_joint.any():
        out.append(
            _finding(
                "gltf-joint-on-zero-weight",
                "WARNING",
                "name a joint other than 0 on a slot with zero weight",
                label,
                rows(zero_with_joint),
                "ACCESSOR_JOINTS_USED_ZERO_WEIGHT",
                int(zero_with_joint.sum()),
                why="unused slots should say joint 0 (glTF 3.7.3.1)",
            )
        )
    # 3. What Blender's importer changes (no validator code: the file is not wrong for these).
    over_one = weights > 1.0
    if over_one.any():
        out.append(
            _finding(
                "gltf-blender-clamps-weight",
                "WARNING",
                "have a weight above 1",
                label,
                rows(over_one),
                None,
                0,
                why="Blender's glTF importer clamps it to 1, so Blender shows this file differently from engines",
            )
        )
    if sets > 1:
        out.append(
            _finding(
                "gltf-blender-merges-sets",
                "INFO",
                f"are read from {sets} JOINTS/WEIGHTS sets",
                label,
                rows((weights != 0)[:, 4:]),
                None,
                0,
                why="Blender's importer merges every set into vertex groups; three.js reads only JOINTS_0/WEIGHTS_0, "
                "so Blender shows this file differently from engines",
            )
        )
    return out


def rotation_checks(doc: GltfDocument) -> list[Finding]:
    """Rotation keyframes whose length misses 1 (ACCESSOR_ANIMATION_SAMPLER_OUTPUT_NON_NORMALIZED_QUATERNION).

    ``vertices`` holds the keyframe indices (of the output accessor) here.
    """
    out = []
    for a, anim in enumerate(doc.items("animations")):
        for c, ch in enumerate(anim.get("channels", [])):
            if ch.get("target", {}).get("path") != "rotation":
                continue
            sampler = read_sampler(doc, a, ch["sampler"])
            # CUBICSPLINE stores (in-tangent, value, out-tangent): only values are quaternions.
            keys = sampler.values[1::3] if sampler.interpolation == "CUBICSPLINE" else sampler.values
            length = np.linalg.norm(keys, axis=1)
            bad = np.flatnonzero(np.abs(length - 1.0) > UNIT_LENGTH_THRESHOLD_VEC4)
            if len(bad):
                worst = float(np.max(np.abs(length[bad] - 1.0)))
                out.append(
                    Finding(
                        code="gltf-rotation-not-unit",
                        severity="ERROR",
                        message=(
                            f"animation {a} channel {c}: {len(bad)} rotation keyframes are not unit quaternions "
                            f"(length off by up to {worst:.3g}); three.js uses them as stored (the mesh scales "
                            "and shears), runtimes that normalise do not"
                        ),
                        count=int(len(bad)),
                        vertices=tuple(int(b) for b in bad),
                        details={
                            "validator_code": "ACCESSOR_ANIMATION_SAMPLER_OUTPUT_NON_NORMALIZED_QUATERNION",
                            "validator_count": int(len(bad)),
                            "where": f"animation {a} channel {c}",
                            "worst_length_error": worst,
                        },
                    )
                )
    return out


#: The influence code reported once per file: a zero-weight slot moves nothing in any engine.
ONCE_PER_FILE = "gltf-joint-on-zero-weight"


def _once_per_file(found: list[Finding]) -> list[Finding]:
    """The primitives' ``gltf-joint-on-zero-weight`` findings as one INFO for the file.

    A slot whose weight is zero moves nothing in any engine (every skinning sums weight times
    matrix); only the validator counts it.  File-wide (``where`` "file", no vertices: rows of
    several primitives share no index space); the count per primitive is in ``details``.
    """
    zero = [f for f in found if f.code == ONCE_PER_FILE]
    if not zero:
        return found
    per_primitive = {str(f.details["where"]): f.count for f in zero}
    total = sum(per_primitive.values())
    listed = ", ".join(f"{where}: {n}" for where, n in list(per_primitive.items())[:_SHOWN])
    merged = Finding(
        code=ONCE_PER_FILE,
        severity="INFO",
        message=(f"{total} vertices in {len(zero)} primitives name a joint other than 0 on a slot with zero weight "
                 f"({listed}{', ...' if len(zero) > _SHOWN else ''}); such a slot moves nothing in any engine, "
                 "but the glTF validator reports it: unused slots should say joint 0 (glTF 3.7.3.1)"),
        count=total,
        details={"validator_code": "ACCESSOR_JOINTS_USED_ZERO_WEIGHT",
                 "validator_count": sum(int(f.details["validator_count"]) for f in zero),
                 "where": "file", "primitives": per_primitive},
    )
    first = found.index(zero[0])
    rest = [f for f in found if f.code != ONCE_PER_FILE]
    return rest[:first] + [merged] + rest[first:]


def file_checks(doc: GltfDocument) -> list[Finding]:
    """Every file-level finding: influences of each skinned primitive (joints on zero-weight slots
    once for the file), then rotation keyframes."""
    out: list[Finding] = []
    for prim in skinned_primitives(doc):
        out.extend(influence_checks(doc, prim))
    out = _once_per_file(out)
    out.extend(rotation_checks(doc))
    return out
