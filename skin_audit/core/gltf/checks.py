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

import stat
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..codes import codes_of
from ..findings import Finding, Severity
from .animation import read_sampler
from .document import GltfDocument, GltfError, read_accessor, uri_target, view_bytes
from .scene import node_parents, rest_transforms
from .skin import SkinnedPrimitive, inverse_bind_matrices, skin_joints, skinned_primitives

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


def negative_time_checks(doc: GltfDocument) -> list[Finding]:
    """Animation key times below 0 (ACCESSOR_ANIMATION_INPUT_NEGATIVE), once per input accessor.

    3.11: ``time[0] >= 0``.  Runtimes start a clip at 0, so keys before it are never shown,
    and Blender's importer puts them on negative frames.  ``vertices`` holds the key indices.
    """
    out = []
    seen: set[int] = set()
    for a, anim in enumerate(doc.items("animations")):
        samplers = anim.get("samplers", [])
        for si, sampler in enumerate(samplers if isinstance(samplers, list) else []):
            index = sampler.get("input") if isinstance(sampler, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or index in seen:
                continue
            seen.add(index)
            times = read_accessor(doc, index, f"animation {a} sampler {si} input")[:, 0]
            bad = np.flatnonzero(times < 0)
            if not len(bad):
                continue
            out.append(Finding(
                code="gltf-animation-time-negative",
                severity="ERROR",
                message=(f"animation {a} sampler {si}: {len(bad)} key times are negative (first "
                         f"{float(times[bad[0]]):g} s at key {int(bad[0])}, accessor {index}); glTF 3.11 "
                         "requires times >= 0: runtimes start the clip at 0 and never show those keys, "
                         "Blender's importer puts them on negative frames"),
                count=int(len(bad)),
                vertices=tuple(int(b) for b in bad),
                details={"validator_code": "ACCESSOR_ANIMATION_INPUT_NEGATIVE", "validator_count": int(len(bad)),
                         "where": f"animation {a} sampler {si}", "accessor": index,
                         "first_time": float(times[bad[0]])},
            ))
    return out


DRACO_EXTENSION = "KHR_draco_mesh_compression"
#: Draco bitstream versions a decoder reads (draco/compression/config/draco_options.h:
#: kDracoMeshBitstreamVersionMajor 2, minor 2; major 1 is still decoded).
_DRACO_VERSIONS = {1: range(0, 4), 2: range(0, 3)}


def _draco_problem(doc: GltfDocument, ext: Any) -> str:
    """Why a primitive's Draco data cannot be decoded ('' when its header is a Draco mesh's).

    The header only (Draco's ``DecodeHeader``): "DRACO", a known version, encoder type 1
    (triangular mesh, which glTF requires) and a known method (0 sequential, 1 edgebreaker).
    A body corrupt past a good header is not seen here.
    """
    if not isinstance(ext, dict):
        return "the extension is not a JSON object"
    view = ext.get("bufferView")
    try:
        data, _stride = view_bytes(doc, view, "KHR_draco_mesh_compression")
    except GltfError as exc:
        return f"its bufferView cannot be read ({exc})"
    if len(data) < 11 or data[:5] != b"DRACO":
        return f"bufferView {view} does not start with a Draco header (b'DRACO'; found {bytes(data[:8])!r})"
    major, minor, encoder, method = data[5], data[6], data[7], data[8]
    if minor not in _DRACO_VERSIONS.get(major, range(0)):
        return f"bufferView {view} holds Draco bitstream version {major}.{minor}, which no Draco decoder reads"
    if encoder != 1:
        return f"bufferView {view} holds a Draco {'point cloud' if encoder == 0 else f'encoder type {encoder}'}, " \
               "not a triangular mesh"
    if method not in (0, 1):
        return f"bufferView {view} names Draco encoding method {method}, not sequential (0) or edgebreaker (1)"
    return ""


def draco_checks(doc: GltfDocument) -> list[Finding]:
    """Primitives whose KHR_draco_mesh_compression data a Draco decoder cannot read.

    The reader (and this audit) reads the uncompressed fallback attributes, which a file that
    does not *require* the extension must carry; engines that decode Draco (three.js with its
    DRACOLoader, Babylon, Blender's importer) read the compressed data instead and drop the
    primitive when it does not decode, so what they show differs from what is audited.
    """
    out = []
    for m, mesh in enumerate(doc.items("meshes")):
        prims = mesh.get("primitives", [])
        for p, prim in enumerate(prims if isinstance(prims, list) else []):
            extensions = prim.get("extensions") if isinstance(prim, dict) else None
            if not isinstance(extensions, dict) or DRACO_EXTENSION not in extensions:
                continue
            problem = _draco_problem(doc, extensions[DRACO_EXTENSION])
            if problem:
                out.append(Finding(
                    code="gltf-draco-undecodable",
                    severity="ERROR",
                    message=(f"mesh {m} primitive {p}: its {DRACO_EXTENSION} data cannot be decoded: {problem}; "
                             "the audit reads the uncompressed fallback, but engines that decode Draco drop this "
                             "primitive: re-export with Draco compression or without it"),
                    count=1,
                    details={"validator_code": None, "validator_count": 0, "where": f"mesh {m} primitive {p}",
                             "problem": problem},
                ))
    return out


def uri_checks(doc: GltfDocument) -> list[Finding]:
    """Buffer and image uris that leave the asset's folder (NON_RELATIVE_URI for absolute ones)."""
    problems = doc.outside_uris
    if not problems:
        return []
    listed = "; ".join(f"{kind[:-1]} {index} {uri[:80]!r}" for kind, index, uri, _ in
                       ((q.kind, q.index, q.uri, q.validator_code) for q in problems[:_SHOWN]))
    flagged = sum(q.validator_code is not None for q in problems)
    return [Finding(
        code="gltf-uri-outside-folder",
        severity="WARNING",
        message=(f"{len(problems)} buffer or image uris leave the asset's folder ({listed}"
                 f"{'; ...' if len(problems) > _SHOWN else ''}); the asset breaks when its folder is moved or "
                 "published: keep every file beside the .gltf (or in a folder below it) under a relative uri"),
        count=len(problems),
        details={"validator_code": "NON_RELATIVE_URI" if flagged else None, "validator_count": flagged,
                 "where": "buffers and images",
                 "uris": [{"kind": q.kind, "index": q.index, "uri": q.uri, "validator_code": q.validator_code}
                          for q in problems]},
    )]


def file_checks(doc: GltfDocument) -> list[Finding]:
    """Every file-level finding: influences of each skinned primitive (joints on zero-weight slots
    once for the file), rotation keyframes, negative key times, undecodable Draco data and uris
    that leave the asset's folder."""
    out: list[Finding] = []
    for prim in skinned_primitives(doc):
        out.extend(influence_checks(doc, prim))
    out = _once_per_file(out)
    out.extend(rotation_checks(doc))
    out.extend(negative_time_checks(doc))
    out.extend(draco_checks(doc))
    out.extend(uri_checks(doc))
    return out


#: Every code ``file_checks`` can report.
FILE_CHECK_CODES = codes_of("gltf-file")


def check_before_import(doc: GltfDocument) -> None:
    """What the audit reads from the file, read before Blender's importer runs (GltfError on a fault).

    The same reads the audit makes after the import (the node tree, each used skin's joints and
    inverse bind matrices, the skinned primitives, the file checks), so a file they refuse is
    refused in a moment instead of after the importer's minutes; nothing is refused that the
    audit would have accepted.  Also refused: a buffer some bufferView uses, or an image, whose
    uri names a FIFO, a device or a folder (the importer would open it and wait or never end).
    """
    for kind in ("buffers", "images"):
        used = {v.get("buffer") for v in doc.items("bufferViews") if isinstance(v, dict)} if kind == "buffers" \
            else None
        for index, entry in enumerate(doc.items(kind)):
            if used is not None and index not in used:
                continue  # never opened, by us or by the importer
            target = uri_target(doc, entry)
            if target is None:
                continue
            try:
                mode = target.stat().st_mode
            except OSError:
                continue  # missing: the importer and the reader say so themselves
            if not stat.S_ISREG(mode):
                raise doc.fail(f"{kind[:-1]} {index}", f"uri names {str(target)!r}, which is not a regular file; "
                               "not imported (Blender's importer would wait on it or read it for ever)")
    node_parents(doc)
    rest_transforms(doc)
    for prim in skinned_primitives(doc):
        inverse_bind_matrices(doc, prim.skin)
    file_checks(doc)
