# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender executables the tests run beside the ``bpy`` module, and the environment they get.

- ``system_blender()``: the ``blender`` on PATH (Debian's 3.4 in CI). Skipped when there is
  none, unless SKIN_AUDIT_REQUIRE_SYSTEM_BLENDER=1 (CI), which makes it a failure.
- ``blender_43()``: the executable named by SKIN_AUDIT_BLENDER_43 (a Blender with
  ``--command``: Debian trixie's 4.3, which CI runs in a chroot through a wrapper). Skipped
  when the variable is unset.

``blender_env()`` is the environment to give another Blender explicitly: ``os.environ``
without the paths the ``bpy`` wheel points at its own files.  The wheel sets OCIO (colour
management) in the process's C environment, outside ``os.environ``, so a child started without
``env=`` inherits it: Debian's OpenColorIO 2.1 then aborts on bpy 5.2's 2.5 config (exit -6).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

#: Variables the bpy wheel may set to paths inside itself.
_WHEEL_VARIABLES = ("OCIO", "MATERIALX_SEARCH_PATH", "PXR_MTLX_STDLIB_SEARCH_PATHS")


def blender_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in _WHEEL_VARIABLES:
        if f"{os.sep}bpy{os.sep}" in env.get(name, ""):
            del env[name]
    return env


def system_blender() -> str:
    exe = shutil.which("blender")
    if exe is None:
        if os.environ.get("SKIN_AUDIT_REQUIRE_SYSTEM_BLENDER") == "1":
            pytest.fail("SKIN_AUDIT_REQUIRE_SYSTEM_BLENDER=1 but no `blender` executable is on PATH", pytrace=False)
        pytest.skip("no `blender` executable on PATH (set SKIN_AUDIT_REQUIRE_SYSTEM_BLENDER=1 to require it)")
    return exe


def blender_43() -> str:
    exe = os.environ.get("SKIN_AUDIT_BLENDER_43", "")
    if not exe:
        pytest.skip("SKIN_AUDIT_BLENDER_43 does not name a Blender executable with --command (4.2 or newer)")
    if shutil.which(exe) is None:
        pytest.fail(f"SKIN_AUDIT_BLENDER_43={exe} is not an executable", pytrace=False)
    return exe


def blender_version(exe: str) -> tuple[int, int]:
    """(major, minor) of a Blender executable, from ``blender --version``."""
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120, check=False,
                         env=blender_env()).stdout
    found = re.search(r"Blender (\d+)\.(\d+)", out)
    if found is None:
        pytest.fail(f"{exe} --version did not say which Blender it is:\n{out[-2000:]}", pytrace=False)
    return int(found.group(1)), int(found.group(2))
