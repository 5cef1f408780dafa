# SPDX-License-Identifier: GPL-3.0-or-later
"""What a worker process is started with: its share of the cores for the blends."""

from __future__ import annotations

import pytest

from skin_audit.batch.process import WorkerConfig, WorkerProcess


def test_a_worker_gets_its_share_of_the_cores_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKIN_AUDIT_THREADS", raising=False)
    assert WorkerProcess(WorkerConfig(options={}, threads=1))._env()["SKIN_AUDIT_THREADS"] == "1"
    assert "SKIN_AUDIT_THREADS" not in WorkerProcess(WorkerConfig(options={}))._env()
    monkeypatch.setenv("SKIN_AUDIT_THREADS", "3")
    assert WorkerProcess(WorkerConfig(options={}, threads=1))._env()["SKIN_AUDIT_THREADS"] == "3"
