# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the skin_audit command line inside a Blender executable.

    blender --background --factory-startup --python scripts/skin_audit_blender.py -- demo --out DIR

Arguments after ``--`` go to the same argparse front end as
``python -m skin_audit``.  The package is imported from this checkout.
Blender exits 0 after an uncaught script error, so the exit code is set here.
"""

import os
import signal
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def _argv() -> list:
    return sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []


def _run() -> int:
    # Blender's own SIGINT handler ignores the first Ctrl-C in background mode and exits 2 (the
    # bad-input code) on the second; Python's raises KeyboardInterrupt, which main() turns into 130.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        from skin_audit.cli import main

        return main(_argv())
    except KeyboardInterrupt:  # before main() installed its own handler
        return EXIT_INTERRUPTED
    except Exception:  # a bug, not bad input: show it and fail loudly
        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    code = _run()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: Blender would otherwise turn SystemExit into its own exit code handling.
    os._exit(code)
