# SPDX-License-Identifier: GPL-3.0-or-later
"""Geometry and skinning maths on plain arrays: affine matrices and the one hierarchy walk,
quaternions, LBS, DQS, influence checks, mesh graphs, squash measures.  Imports numpy and
core/errors, core/tolerances only; imported by core/audit and core/twist."""
