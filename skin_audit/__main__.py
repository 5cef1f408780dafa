# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit``: the command line (needs the ``bpy`` module for Blender work)."""

import os
import sys

from .cli import main

code = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.flush()
# os._exit: bpy 4.2 can crash in its own shutdown after a glTF import or a failed
# Python driver, which would turn our exit code into a segfault's.
os._exit(code)
