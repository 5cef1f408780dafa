# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit``: the command line (needs the ``bpy`` module for Blender work)."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
