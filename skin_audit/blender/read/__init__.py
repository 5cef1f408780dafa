# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender into arrays: matrices, positions, vertex-group weights, the extraction of a skinned
mesh, and Blender's own evaluation of test poses on sandbox copies.  Never changes user data."""
