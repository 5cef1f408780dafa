# SPDX-License-Identifier: GPL-3.0-or-later
"""numpy-only skinning maths and judgement; never imports bpy."""
