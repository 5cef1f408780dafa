# SPDX-License-Identifier: GPL-3.0-or-later
"""Every tolerance skin_audit uses, in one place, with the reason for each.

numpy work is float64; Blender stores coordinates and weights as float32
(machine epsilon 1.19e-7), so comparisons with Blender are scaled by the
mesh's size and allow a few float32 rounding steps.
"""

from __future__ import annotations

#: Strict core: |sum of weights - 1| allowed (docs/twist-experiment.md). No normalisation.
WEIGHT_SUM = 1e-12

#: Largest absolute matrix entry accepted; bigger values are a units or export bug.
MATRIX_MAGNITUDE = 1e6

#: Affine last row must be (0, 0, 0, 1) to this.
AFFINE_ROW = 1e-12

#: Rigid inverse: |R^T R - I| and |det R - 1| allowed.
ORTHONORMAL = 1e-9

#: The same for matrices Blender stored as float32.
ORTHONORMAL_FLOAT32 = 1e-5

#: Translation-only helper: |R - I| allowed before it refuses.
TRANSLATION_ONLY = 1e-12

#: Bind pose must not move vertices (float64, seed measured 5.55e-17).
BIND_DRIFT_FLOAT64 = 1e-12

#: numpy against closed forms (float64; seed measured ~2.2e-16).
CLOSED_FORM_FLOAT64 = 1e-12

#: The verifier's own float64 recomputation against the stored numpy positions.
VERIFY_NUMPY_RELATIVE = 1e-10

#: Blender (float32) against numpy, relative to the mesh's bounding size.
#: Measured agreement is ~1e-7; 2e-6 allows about sixteen float32 steps.
FLOAT32_RELATIVE = 2e-6

#: Audit of artist rigs: Blender (float32, its own operation order) against the
#: float64 recomputation, relative to the mesh size.  Measured agreement is
#: 1.5e-6 to 1e-5 at a scene size of 3 (research note on armature_deform.cc).
SKINNING_MATCH_RELATIVE = 2e-5

#: Mirrored bone pairs: rest frames may differ from a true mirror image by this
#: angle (degrees) and their heads by this fraction of the mesh size.
MIRROR_ANGLE_DEGREES = 1.0
MIRROR_DISTANCE_RELATIVE = 1e-3

#: Blender's own rule: a vertex whose deform weights sum to <= this stays put
#: (armature_deform.cc, ``contrib > 0.0001f``).
BLENDER_MIN_CONTRIB = 1e-4

#: A triangle is degenerate when its area is below this fraction of the mean
#: bind-pose triangle area (catches float32 collapse at ~1e-8 radius).
DEGENERATE_AREA_RELATIVE = 1e-6

#: Bind mesh check: a triangle must have at least this fraction of the mean area.
BIND_MIN_AREA_RELATIVE = 1e-9


def float32_tolerance(size: float) -> float:
    """Absolute tolerance for Blender-vs-numpy positions on a mesh of ``size``."""
    return FLOAT32_RELATIVE * max(float(size), 1.0)
