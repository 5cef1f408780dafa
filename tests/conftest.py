# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared fixtures.

Blender tests carry ``pytestmark = pytest.mark.blender`` (and ``blender42`` when
they must also pass on bpy 4.2 LTS). They ask for ``bpy`` (the module, checked
once per session) and ``empty_scene`` (an empty factory scene before and after
each test). Nothing is imported from Blender at collection time, so the core
tier still collects and runs on an install without ``bpy``
(``pytest -m "not blender"``).
"""

from __future__ import annotations

import pytest

#: The oldest Blender the project claims (blender_manifest.toml: blender_version_min).
OLDEST_BLENDER = (4, 2, 0)


@pytest.fixture(scope="session")
def bpy():
    """The real ``bpy`` module; fails (never skips) a Blender test when it is missing."""
    try:
        import bpy as module
    except ImportError as exc:
        pytest.fail(
            f"this test needs Blender's Python module and `import bpy` failed ({exc}); run it with the "
            "project's venv (`bash scripts/setup_env.sh`, then `.venv/bin/python -m pytest`), or "
            "deselect the Blender tier with `-m 'not blender'`",
            pytrace=False,
        )
    if tuple(module.app.version) < OLDEST_BLENDER:
        pytest.fail(
            f"bpy {module.app.version_string} is older than the oldest supported Blender "
            f"{'.'.join(map(str, OLDEST_BLENDER))}",
            pytrace=False,
        )
    return module


@pytest.fixture
def empty_scene(bpy):
    """An empty factory scene for the test, and again after it (nothing leaks between tests)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy.context.scene
    bpy.ops.wm.read_factory_settings(use_empty=True)


_EXIT_STATUS: list[int] = []


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """bpy 4.2 can crash in its own shutdown (after a glTF import or a failed driver),
    turning a green run into exit 139; leave with pytest's own status before that."""
    import sys

    module = sys.modules.get("bpy")
    if module is not None and _EXIT_STATUS and tuple(module.app.version) < (4, 3, 0):
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
