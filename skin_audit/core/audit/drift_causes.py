# SPDX-License-Identifier: GPL-3.0-or-later
"""What can move a mesh with its armature at Rest Position: only causes that are present.

The rest evaluation keeps the stack up to and including the Armature modifier,
so modifiers after it cannot be the cause.  What can: shape keys and modifiers
before it (they change its input), B-Bone segments on a bone weighting a moved
vertex (a curved B-Bone deforms even at rest), and an armature scale so far from
1 that float32 loses the mesh in Blender's matrix products.  When none is present
the drift is called unexplained, never blamed on something that does not exist.
numpy only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from .skinned_mesh import SkinnedMesh

#: Said when no present cause accounts for the drift.
UNEXPLAINED = "unexplained (no active shape key, no modifier before the Armature, no B-Bone on a moved " \
              "vertex's bones, armature scale within float32's range)"


def rest_drift_causes(mesh: SkinnedMesh, moved: NDArray[np.bool_]) -> list[str]:
    """The present causes of rest drift on the ``moved`` (V,) vertices, most specific first."""
    # A pinned key is a display switch (Shape Key Lock): said, so it is not mistaken for a key left on.
    causes = [f"shape key '{k}'" + (" (pinned by Shape Key Lock: shown alone at full strength whatever its value)"
                                    if k == mesh.shape_key_pinned else "") for k in mesh.shape_keys_active]
    causes += [f"modifier '{m}'" for m in mesh.modifiers_before]
    bones = mesh.deform_groups()
    segments = mesh.bones.bbone_segments
    bendy = sorted({mesh.bones.names[b] for g, b in enumerate(bones)
                    if b >= 0 and segments[b] > 1 and bool((mesh.weights[g][moved] > 0).any())})
    if bendy:
        causes.append(f"B-Bone segments on {', '.join(bendy[:5])}{' ...' if len(bendy) > 5 else ''}")
    scale = np.abs(np.asarray(mesh.armature_scale, dtype=np.float64))
    if scale.size and (not np.isfinite(scale).all() or scale.max() > tolerances.EXTREME_SCALE
                       or scale.min() < 1.0 / tolerances.EXTREME_SCALE):
        causes.append(f"armature scale {np.round(scale, 6).tolist()}: Blender's float32 matrices lose the mesh "
                      "at that scale; apply the scale (Ctrl+A) or use units near 1")
    return causes
