# SPDX-License-Identifier: GPL-3.0-or-later
"""The project's error types: one class per kind of bad input.

Every message says what was wrong, where (array, vertex, slot, joint) and,
where it helps, what to do.  Front ends catch ``SkinAuditError`` only.
"""

from __future__ import annotations


class SkinAuditError(Exception):
    """Base of every error skin_audit raises on purpose."""

    code = "skin-audit-error"


class ShapeError(SkinAuditError, ValueError):
    code = "bad-shape"


class JointIndexError(SkinAuditError, IndexError):
    code = "joint-index-out-of-range"


class NegativeWeightError(SkinAuditError, ValueError):
    code = "negative-weight"


class WeightSumError(SkinAuditError, ValueError):
    code = "weight-sum-not-one"


class NonFiniteWeightError(SkinAuditError, ValueError):
    code = "non-finite-weight"


class NonFinitePointError(SkinAuditError, ValueError):
    code = "non-finite-point"


class NonAffineMatrixError(SkinAuditError, ValueError):
    code = "non-affine-matrix"


class NonFiniteMatrixError(SkinAuditError, ValueError):
    code = "non-finite-matrix"


class MatrixMagnitudeError(SkinAuditError, ValueError):
    code = "matrix-magnitude"


class UnsupportedInverseError(SkinAuditError, ValueError):
    """A helper was asked to invert a transform outside what it handles."""

    code = "unsupported-inverse"


class NotRigidError(SkinAuditError, ValueError):
    code = "not-rigid"


class HierarchyError(SkinAuditError, ValueError):
    code = "bad-hierarchy"


class MeshError(SkinAuditError, ValueError):
    code = "bad-mesh"


class VerificationError(SkinAuditError):
    """The independent verifier found a disagreement in a scene file."""

    code = "verification-failed"


class InputError(SkinAuditError):
    """A file, folder or argument a user gave cannot be used."""

    code = "bad-input"
