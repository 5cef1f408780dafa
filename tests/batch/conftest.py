# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the batch tests: the audit options and the in-process reference run."""

from __future__ import annotations

import pytest

from .helpers import BATCH_PATHS, file_dicts


@pytest.fixture(scope="session")
def options():
    from skin_audit.core.audit.options import AuditOptions

    return AuditOptions()


@pytest.fixture(scope="session")
def in_process(bpy, options) -> list[dict]:
    """The single-process run the batch runs must reproduce, file for file."""
    from skin_audit.blender.run.audit_files import audit_paths

    files = file_dicts(audit_paths(BATCH_PATHS, options))
    bpy.ops.wm.read_factory_settings(use_empty=True)  # leave no file loaded behind
    assert len(files) == 7 and [f["status"] for f in files].count("ok") == 6, files
    return files
