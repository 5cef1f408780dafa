# SPDX-License-Identifier: GPL-3.0-or-later
"""Whole jobs in Blender: audit files or the open scene, run the twist experiment.  They
compose read/ and build/ with core/ and hand back core data."""
