# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only builders: small skinned rigs in numpy (core tier) and in Blender, the seed's hand control.
Never shipped in the extension zip."""
