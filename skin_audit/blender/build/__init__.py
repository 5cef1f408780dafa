# SPDX-License-Identifier: GPL-3.0-or-later
"""Build in Blender: the twist experiment's rig (the only thing the product builds)."""
