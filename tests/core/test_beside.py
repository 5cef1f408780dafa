# SPDX-License-Identifier: GPL-3.0-or-later
"""Coarse work on a thread beside the caller (``parallel.Beside``) and the audit's use of it: the
rig's checks run beside the meshes' own, are finished before Blender is first called back, and
change no result (no bpy)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from skin_audit.core.audit import mesh_audit
from skin_audit.core.audit.mesh_audit import audit_character
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.maths.parallel import Beside
from tests.factories import numpy_rigs as nr


@pytest.mark.parametrize("threads", ["1", "2"])
def test_beside_gives_the_result_or_the_error_of_its_work(monkeypatch, threads):
    monkeypatch.setenv("SKIN_AUDIT_THREADS", threads)
    caller = threading.get_ident()
    ran_on: list[int] = []

    def work():
        ran_on.append(threading.get_ident())
        return 42

    result = Beside(work)
    assert result() == 42 and result() == 42 and len(ran_on) == 1  # run once, its result kept
    assert (ran_on[0] != caller) == (threads == "2")  # one thread allowed: run when asked, here

    def broken():
        raise ValueError("bad rig")

    with pytest.raises(ValueError, match="bad rig"):
        Beside(broken)()


@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_rig_checks_end_before_blender_is_called_and_change_nothing(monkeypatch, threads):
    """A slow rig audit (symmetry, stray weights) and a slow pose sweep on their threads: the spot
    checker, standing in for Blender, is only called once both have finished; the results equal
    those of one thread."""
    monkeypatch.setenv("SKIN_AUDIT_THREADS", "1")
    mesh = nr.skinned_mesh(nr.chain_tube())
    serial = audit_character("Rig", [mesh], AuditOptions(), [None])

    monkeypatch.setenv("SKIN_AUDIT_THREADS", threads)
    done = threading.Event()
    real = mesh_audit.audit_rig

    def slow_rig(*args, **kwargs):
        time.sleep(0.3)  # longer than the mesh's own checks up to the spot checks
        out = real(*args, **kwargs)
        done.set()
        return out

    monkeypatch.setattr(mesh_audit, "audit_rig", slow_rig)
    swept = threading.Event()
    real_sweep = mesh_audit.run_sweep

    def slow_sweep(*args, **kwargs):
        time.sleep(0.3)
        out = real_sweep(*args, **kwargs)
        swept.set()
        return out

    monkeypatch.setattr(mesh_audit, "run_sweep", slow_sweep)
    calls: list[bool] = []

    def checker(poses, sample=None):
        calls.append(done.is_set() and swept.is_set())
        return [np.zeros((0, 3)) for _ in poses]

    rig, (audit,) = audit_character("Rig", [mesh], AuditOptions(), [checker])
    assert calls and all(calls)  # every call to Blender came after the rig's checks
    assert rig.findings == serial[0].findings and rig.metrics == serial[0].metrics
    assert [f.code for f in audit.findings] == [f.code for f in serial[1][0].findings]
    for name, values in serial[1][0].measures.items():
        np.testing.assert_array_equal(audit.measures[name], values)


def test_an_error_in_the_mesh_checks_waits_for_the_threads_beside(monkeypatch):
    """When the mesh's own checks fail, the sweep and the rig's checks on their threads are finished
    before the error leaves the audit (its caller may call Blender next)."""
    monkeypatch.setenv("SKIN_AUDIT_THREADS", "2")
    finished: list[str] = []
    real_sweep, real_rig = mesh_audit.run_sweep, mesh_audit.audit_rig

    def slow(name, real):
        def run(*args, **kwargs):
            time.sleep(0.3)
            out = real(*args, **kwargs)
            finished.append(name)
            return out
        return run

    def broken(*args, **kwargs):
        raise RuntimeError("weights unreadable")

    monkeypatch.setattr(mesh_audit, "run_sweep", slow("sweep", real_sweep))
    monkeypatch.setattr(mesh_audit, "audit_rig", slow("rig", real_rig))
    monkeypatch.setattr(mesh_audit, "weight_findings", broken)
    with pytest.raises(RuntimeError, match="weights unreadable"):
        audit_character("Rig", [nr.skinned_mesh(nr.chain_tube())], AuditOptions(), [None])
    assert sorted(finished) == ["rig", "sweep"]
    assert not [t for t in threading.enumerate() if t.name == "skin_audit-beside"]
