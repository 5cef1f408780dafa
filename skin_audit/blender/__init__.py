# SPDX-License-Identifier: GPL-3.0-or-later
"""The only layer that touches ``bpy.data``: read Blender into arrays, build
rigs, evaluate the depsgraph."""
