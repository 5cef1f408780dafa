# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one scenario file inside a fresh Blender-module process (not a test file).

    BLENDER_USER_RESOURCES=<tmp> python blender_driver.py SCENARIO.py RESULTS.json

The scenario's ``setup()`` runs first (installing the extension), then every
``check_*`` function in the order written.  Each check's outcome (or its
traceback) goes to RESULTS.json; ``test_*.py`` turns them into pytest tests.
Checks share one Blender session, so later checks may build on earlier ones.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path


def _guard_profile() -> None:
    """Refuse to run against the real user profile."""
    resources = os.environ.get("BLENDER_USER_RESOURCES", "")
    if not resources or not Path(resources).resolve().is_relative_to(Path(tempfile.gettempdir()).resolve()):
        sys.exit("blender_driver: BLENDER_USER_RESOURCES must name a temporary folder")


def main(scenario: str, results_path: str) -> int:
    _guard_profile()
    sys.path.insert(0, str(Path(__file__).parent))
    spec = importlib.util.spec_from_file_location(Path(scenario).stem, scenario)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results: dict[str, dict] = {}
    setup_error = ""
    try:
        if hasattr(module, "setup"):
            module.setup()
    except Exception:
        setup_error = "setup failed:\n" + traceback.format_exc()
    for name, func in vars(module).items():
        if not name.startswith("check_") or not callable(func):
            continue
        start = time.perf_counter()
        error = setup_error
        if not error:
            try:
                func()
            except Exception:
                error = traceback.format_exc()
        results[name] = {"ok": not error, "error": error, "seconds": time.perf_counter() - start}
    Path(results_path).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1], sys.argv[2])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip Blender's slow module teardown
