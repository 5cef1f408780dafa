# SPDX-License-Identifier: GPL-3.0-or-later
"""numpy-only skinning maths and judgement; never imports bpy (tests/core/test_no_bpy.py proves it).

- ``maths/``: affine matrices and the one hierarchy walk, quaternions, LBS, DQS, B-Bones,
  influence checks, mesh graphs, squash measures.
- ``audit/``: the audit of skinned meshes, from the ``SkinnedMesh`` arrays to the report.
- ``twist/``: the twist experiment, its outputs and the independent verifier.
- shared by all: ``errors`` (the project's error types), ``tolerances`` (every epsilon, with
  its reason), ``findings`` (frozen findings and severities), ``output_files`` (all-or-nothing
  writes).

``audit`` and ``twist`` never import each other; both import ``maths`` and the shared modules.
"""
