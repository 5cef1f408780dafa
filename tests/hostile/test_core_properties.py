# SPDX-License-Identifier: GPL-3.0-or-later
"""Property tests: random weights, matrices, NaN/inf and degenerate bones thrown at the numpy core.

Every function either returns finite numbers of the promised shape or raises the
project's own error type (``SkinAuditError``); nothing else escapes.  The full
mesh audit, after ``finite_audit``, always serialises as strict JSON.  No bpy.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

# requirements-dev.txt pins hypothesis; the bpy 4.2 venv (which runs only blender42 tests) lacks it.
pytest.importorskip("hypothesis", reason="hypothesis is a dev dependency of .venv (requirements-dev.txt)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from skin_audit.core.audit.armature_modifier import recompute_blender
from skin_audit.core.audit.engine_target import target_positions
from skin_audit.core.audit.finite import finite_audit
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings
from skin_audit.core.engines.targets import get_target
from skin_audit.core.errors import SkinAuditError
from skin_audit.core.maths.affine import (
    evaluate_hierarchy,
    rigid_inverse,
    skinning_matrices,
    translation_only_inverse,
    validate_affine,
)
from skin_audit.core.maths.dqs import dual_quaternion_skinning
from skin_audit.core.maths.lbs import linear_blend_skinning
from tests.factories import numpy_rigs
from tests.factories.audits import audit_skinned_mesh

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Values that break arithmetic: zero, tiny, huge, non-finite, negative zero.
NASTY = st.sampled_from([0.0, -0.0, 1e-300, 1e-30, 1e20, 1e300, -1e300, math.nan, math.inf, -math.inf])
ANY_FLOAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), NASTY)
FINITE_FLOAT = st.one_of(st.floats(-1e3, 1e3, allow_nan=False), st.sampled_from([0.0, 1e-30, 1e6, -1e6]))


def _arrays(shape, elements=ANY_FLOAT):
    return hnp.arrays(np.float64, shape, elements=elements)


@st.composite
def skinning_inputs(draw, elements=ANY_FLOAT):
    v = draw(st.integers(1, 6))
    k = draw(st.integers(1, 4))
    j = draw(st.integers(1, 4))
    points = draw(_arrays((v, 3), elements))
    indices = draw(hnp.arrays(np.int64, (v, k), elements=st.integers(-2, j + 1)))
    weights = draw(_arrays((v, k), elements))
    skin = draw(_arrays((j, 4, 4), elements))
    if draw(st.booleans()):
        skin[:, 3] = (0.0, 0.0, 0.0, 1.0)  # affine more often than chance would make it
    if draw(st.booleans()):
        weights = np.abs(weights)
        sums = weights.sum(axis=1, keepdims=True)
        with np.errstate(all="ignore"):
            weights = weights / np.where(sums > 0, sums, 1.0)
    return points, indices, weights, skin


def _finite_or_own_error(fn, *args, shape=None):
    try:
        with np.errstate(all="ignore"):
            out = fn(*args)
    except SkinAuditError:
        return None
    out = np.asarray(out)
    if shape is not None:
        assert out.shape == shape
    assert np.isfinite(out).all(), f"{fn.__name__} returned non-finite values for accepted input"
    return out


@SETTINGS
@given(skinning_inputs())
def test_lbs_returns_finite_points_or_raises_its_own_error(data):
    points, indices, weights, skin = data
    _finite_or_own_error(linear_blend_skinning, points, indices, weights, skin, shape=points.shape)


@SETTINGS
@given(skinning_inputs())
def test_dqs_returns_finite_points_or_raises_its_own_error(data):
    points, indices, weights, skin = data
    _finite_or_own_error(dual_quaternion_skinning, points, indices, weights, skin, shape=points.shape)


@SETTINGS
@given(_arrays((3, 4, 4)))
def test_affine_helpers_return_finite_matrices_or_raise_their_own_error(m):
    m = m.copy()
    _finite_or_own_error(validate_affine, m)
    _finite_or_own_error(rigid_inverse, m[0])
    _finite_or_own_error(translation_only_inverse, m[1])
    _finite_or_own_error(skinning_matrices, m, m[::-1])


@SETTINGS
@given(_arrays((4, 4, 4)), st.lists(st.integers(-3, 5), min_size=4, max_size=4))
def test_hierarchy_walk_returns_finite_worlds_or_raises_its_own_error(local, parents):
    # Parents out of range, cycles and self-parents included.
    _finite_or_own_error(evaluate_hierarchy, local, parents)


# ---------------------------------------------------------------- Blender's Armature modifier recomputed

@st.composite
def bone_channels(draw, finite: bool):
    """(2, 4, 4) channels: rigid, scaled (0 included), sheared, huge, or (when not finite) NaN/inf."""
    out = np.broadcast_to(np.eye(4), (2, 4, 4)).copy()
    for j in range(2):
        kind = draw(st.sampled_from(["rest", "rotation", "scale", "zero", "shear", "huge", "random"]
                                    + ([] if finite else ["nan", "inf"])))
        angle = draw(st.floats(-7.0, 7.0))
        c, s = math.cos(angle), math.sin(angle)
        rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        if kind == "rotation":
            out[j, :3, :3] = rot
        elif kind == "scale":
            out[j, :3, :3] = rot * draw(st.floats(1e-6, 1e3))
        elif kind == "zero":
            out[j, :3, :3] = 0.0
        elif kind == "shear":
            out[j, :3, :3] = rot + np.array([[0.0, draw(st.floats(-50, 50)), 0.0], [0.0] * 3, [0.0] * 3])
        elif kind == "huge":
            out[j, :3, :3] = rot * 1e6
        elif kind == "random":
            out[j, :3, :] = draw(_arrays((3, 4), FINITE_FLOAT))
        elif kind == "nan":
            out[j, 0, 0] = math.nan
        elif kind == "inf":
            out[j, 1, 3] = math.inf
        out[j, :3, 3] += draw(_arrays((3,), st.floats(-10, 10)))
    return out


@st.composite
def meshes(draw, finite: bool):
    rig = numpy_rigs.chain_tube(rings=3, segments=4)
    w = rig.weight_array().astype(np.float64)
    kind = draw(st.sampled_from(["clean", "random", "zero"] + ([] if finite else ["nasty"])))
    if kind == "random":
        w = draw(_arrays(w.shape, st.floats(0.0, 1.0)))
    elif kind == "zero":
        w[:, : w.shape[1] // 2] = 0.0
    elif kind == "nasty":
        w = draw(_arrays(w.shape, ANY_FLOAT))
    modifier = ArmatureModifierSettings("Armature", preserve_volume=draw(st.booleans()))
    return numpy_rigs.skinned_mesh(rig, blender=None, modifier=modifier, weights=w.astype(np.float32),
                                   channel=draw(bone_channels(finite)))


@SETTINGS
@given(meshes(finite=True))
def test_recomputation_of_finite_rigs_is_finite_or_raises_its_own_error(mesh):
    # Degenerate bones included: scale 0 (Blender keeps such vertices finite), shear, 1e6.
    with np.errstate(all="ignore"):
        try:
            rec = recompute_blender(mesh, mesh.read_pose)
            engine = target_positions(mesh, get_target("raw"), mesh.read_pose.channel)
        except SkinAuditError:
            return
    assert np.isfinite(rec.positions).all(), "LBS/DQS of finite bones and weights gave NaN or infinity"
    assert np.isfinite(engine).all()
    assert np.isfinite(recompute_blender(mesh, mesh.read_pose).positions).all()


@pytest.mark.parametrize("finite", [True, False])
def test_the_mesh_audit_of_any_rig_serialises_as_strict_json_or_raises_its_own_error(finite):
    options = AuditOptions(shape_checks=True)

    @SETTINGS
    @given(meshes(finite=finite))
    def check(mesh):
        with np.errstate(all="ignore"):
            try:
                audit = finite_audit(audit_skinned_mesh(mesh, options))
            except SkinAuditError:
                return
        text = json.dumps(audit.to_dict(), allow_nan=False)  # raises on NaN or Infinity
        assert json.loads(text)["vertices"] == mesh.vertex_count

    check()
