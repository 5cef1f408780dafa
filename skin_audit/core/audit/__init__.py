# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit of skinned meshes: the SkinnedMesh arrays, Blender's Armature-modifier semantics,
one module per rule family (weights and structure in mesh_audit, drift and divergence, pose
sweep, symmetry, stray weights) and the report.  Imports core/maths and the shared core
modules; never core/twist, never bpy."""
