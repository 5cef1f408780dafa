# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit``'s argument handling without bpy (core tier): bad usage and bad input
exit 2 with a message saying what was wrong, ``--version`` exits 0."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from skin_audit import __version__
from skin_audit.cli import main

REPO = Path(__file__).resolve().parents[2]

#: (arguments, exit code, text expected on stderr).
CASES = [
    ((), 2, "the following arguments are required: COMMAND"),
    (("frobnicate",), 2, "argument COMMAND: invalid choice: 'frobnicate'"),
    (("audit",), 2, "the following arguments are required: PATH"),
    (("audit", "x.blend", "--fail-on", "sometimes"), 2, "argument --fail-on: invalid choice: 'sometimes'"),
    (("audit", "x.blend", "--jobs", "0"), 2, "argument --jobs: must be at least 1, got 0"),
    (("verify", "/nonexistent/scene.json"), 2, "skin_audit: error: /nonexistent/scene.json: no such file"),
]


def _id(value: object) -> str | None:
    return " ".join(value) if isinstance(value, tuple) else None


@pytest.mark.parametrize(("args", "code", "message"), CASES, ids=_id)
def test_bad_usage_and_input_exit_2_saying_why(args, code, message, capsys):
    err = io.StringIO()
    assert main(list(args), io.StringIO(), err) == code
    said = err.getvalue() + capsys.readouterr().err  # argparse writes to sys.stderr itself
    assert message in said, said


BLOCKED = r"""
import runpy, sys
sys.modules["bpy"] = None  # any `import bpy` now fails: the argument handling must not need it
sys.argv = ["skin_audit", *sys.argv[1:]]
runpy.run_module("skin_audit", run_name="__main__")
"""


@pytest.mark.parametrize(("args", "code", "message"), [CASES[3], CASES[5], (("--version",), 0, "")])
def test_python_m_skin_audit_exits_with_the_code(args, code, message):
    done = subprocess.run([sys.executable, "-c", BLOCKED, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == code, (done.stdout, done.stderr)
    assert message in done.stderr
    if args == ("--version",):
        assert done.stdout.strip() == f"skin_audit {__version__}"
    else:
        assert "Traceback" not in done.stderr
