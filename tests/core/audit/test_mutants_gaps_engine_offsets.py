# SPDX-License-Identifier: GPL-3.0-or-later
"""How far a target drawing weights as stored lands from Blender, at several poses at once, by hand.

Every weight halved: Blender divides by the sum (0.5) and draws the normalised blend ``q``;
``raw`` draws the stored weights, ``0.5 q`` (the translation parts scale too): ``|q - 0.5 q| = 0.5 |q|``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.engine_target import engine_offsets_many, prepare_target
from skin_audit.core.engines.targets import get_target
from tests.factories import numpy_rigs as nr


@pytest.mark.parametrize("stretch", [1.0, 2.0])
def test_the_offsets_of_half_weights_are_half_the_distance_from_the_origin(stretch):
    # Root from y = 0 to 1, Child from 1 to 2; the mesh object stretched along x into the armature.
    rig = nr.chain_tube(("Root", "Child"))
    halved = nr.Rig(rig.rows, rig.rest, {g: 0.5 * w for g, w in rig.groups.items()}, rig.edges)
    mesh = nr.skinned_mesh(halved, blender=None, mesh_to_armature=np.diag([stretch, 1.0, 1.0, 1.0]))
    prepared = prepare_target(mesh, get_target("raw"))
    assert prepared.offsets is not None  # the same (bone, vertex) pairs, other weights
    channels = np.stack([nr.channels(rig.rows, {"Child": nr.rotation("x", math.radians(d))}) for d in (0.0, 90.0)])
    out = engine_offsets_many(mesh, channels, prepared)
    assert out is not None and out.shape == (2, len(rig.rest))
    p = rig.rest  # the mesh's own space
    # At rest q = p.
    np.testing.assert_allclose(out[0], 0.5 * np.linalg.norm(p, axis=1), atol=1e-12)
    # Ring 0 is Root's alone (Root stays): q = p.  Ring 8 (y = 2) is Child's alone: a quarter turn about
    # x through Child's head (0, 1, 0) sends (s x, 2, z) to (s x, 1 - z, 1), back in the mesh's space (x, 1 - z, 1).
    r0, r8 = nr.ring(0), nr.ring(8)
    np.testing.assert_allclose(out[1][r0], 0.5 * np.linalg.norm(p[r0], axis=1), atol=1e-12)
    x, z = p[r8, 0], p[r8, 2]
    np.testing.assert_allclose(out[1][r8], 0.5 * np.sqrt(x ** 2 + (1.0 - z) ** 2 + 1.0), atol=1e-12)
