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
def in_process_audits(bpy, options) -> tuple:
    """The single-process run's ``FileAudit``s, file for file."""
    from skin_audit.blender.run.audit_files import audit_paths

    audits = tuple(audit_paths(BATCH_PATHS, options))
    bpy.ops.wm.read_factory_settings(use_empty=True)  # leave no file loaded behind
    return audits


@pytest.fixture(scope="session")
def in_process(in_process_audits) -> list[dict]:
    """The single-process run the batch runs must reproduce, file for file."""
    files = file_dicts(in_process_audits)
    assert len(files) == 7 and [f["status"] for f in files].count("ok") == 6, files
    return files


@pytest.fixture(scope="session")
def in_process_run(in_process_audits) -> list[dict]:
    """The same as the command line reports a run: skeletons compared across its files."""
    from skin_audit.core.skeleton import cross_file_findings

    return file_dicts(cross_file_findings(in_process_audits))
