# SPDX-License-Identifier: GPL-3.0-or-later
"""The command line keeps freed memory for reuse on Linux/glibc, and can be told not to."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHECK = "from skin_audit.core.heap import keep_freed_memory as k; print(k(), k())"


def _run(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "SKIN_AUDIT_KEEP_HEAP"}
    if env_value is not None:
        env["SKIN_AUDIT_KEEP_HEAP"] = env_value
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, cwd=root,
                          check=True)
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_memory_is_kept_unless_switched_off() -> None:
    assert _run(None) == "True True"  # once per process; the second call says it is in force
    assert _run("0") == "False False"
