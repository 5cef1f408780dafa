# SPDX-License-Identifier: GPL-3.0-or-later
"""Run inside a Blender executable, as ``blender --command skin_audit ARGS...`` runs the extension:

    blender --background --factory-startup --python tests/cli/blender_command_sigint.py -- ARGS...

It calls ``skin_audit.blender_command.execute(ARGS)`` (the function ``--command``
calls) with Blender's own SIGINT handler in place, which Python's ``signal.getsignal``
reports as None.  Then it sends itself SIGINT: Blender's background handler answers
"Sent an internal break event" and the process goes on; ``"survived Ctrl-C"`` on stdout
says so.  The exit code is ``execute``'s.  Blender 3.4 has no ``--command``; this runs
the same function in the same state.
"""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

print(f"SIGINT before: {signal.getsignal(signal.SIGINT)!r}", flush=True)
from skin_audit.blender_command import execute  # noqa: E402  (after the checkout is on sys.path)

code = execute(sys.argv[sys.argv.index("--") + 1:])
print(f"execute returned {code}", flush=True)
os.kill(os.getpid(), signal.SIGINT)
print("survived Ctrl-C", flush=True)
sys.stderr.flush()
os._exit(code)
