# SPDX-License-Identifier: GPL-3.0-or-later
"""The twist experiment: the open cylinder, its closed forms, the seed's float64
reproduction, the checks, the output files (JSON, CSV, SVG) and the independent verifier.
Imports core/maths and the shared core modules; never core/audit, never bpy."""
