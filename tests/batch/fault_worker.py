# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only worker: the real batch worker, with faults injected for files named on its command line.

    python tests/batch/fault_worker.py [--crash-on NAME] [--hang-on NAME] [--hog-on NAME]
        [--kill-parent-on NAME] [--kill-parent-once-on NAME:MARKER] -- WORKER OPTIONS...

Tests pass ``(sys.executable, FAULT_WORKER, "--crash-on", "x.glb", "--")`` as the batch
runner's worker ``command``.  The hooks live here, under tests/, and nowhere in the
package: no environment variable or option of skin_audit can trigger them.

- ``--crash-on``: the worker sends itself SIGSEGV (as Blender crashing on a file would);
- ``--hang-on``: it sleeps far past any test's --file-timeout;
- ``--hog-on``: it allocates 4 GB with numpy (under --file-memory-mb: a real MemoryError);
- ``--hog-inside-on``: the same inside the audit's own guard (``guarded_audit``), where a large
  rig's arrays run out of memory;
- ``--kill-parent-on``: it SIGKILLs its parent (a Dask worker lost mid-task);
- ``--kill-parent-once-on NAME:MARKER``: the same, the first time only (MARKER is a file it creates).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path


def main() -> None:
    argv = sys.argv[1:]
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    for hook in ("crash-on", "hang-on", "hog-on", "hog-inside-on", "kill-parent-on", "kill-parent-once-on"):
        parser.add_argument(f"--{hook}", action="append", default=[])
    faults = parser.parse_args(argv[:split])
    once = dict(spec.split(":", 1) for spec in faults.kill_parent_once_on)

    from skin_audit.batch import worker

    real = worker.audit_one

    def audit_one(path, options, object_name):
        name = Path(path).name
        if name in faults.crash_on:
            os.kill(os.getpid(), signal.SIGSEGV)
        if name in faults.hang_on:
            time.sleep(3600)
        if name in faults.hog_on:
            import numpy as np

            np.ones(2**29)  # 4 GB of float64
        if name in once and not os.path.exists(once[name]):
            Path(once[name]).touch()  # the marker: the next worker to get this file audits it
            faults.kill_parent_on.append(name)
        if name in faults.kill_parent_on:
            os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(3600)  # prctl(PDEATHSIG) ends this process with its parent
        return real(path, options, object_name)

    worker.audit_one = audit_one
    if faults.hog_inside_on:
        from skin_audit.blender.run import audit_files

        real_file = audit_files.audit_file

        def audit_file(path, options, object_name=None):
            if Path(path).name in faults.hog_inside_on:
                import numpy as np

                np.ones(2**29)  # 4 GB of float64, asked for where the audit's arrays are
            return real_file(path, options, object_name)

        audit_files.audit_file = audit_file
    code = worker.serve(argv[split + 1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
