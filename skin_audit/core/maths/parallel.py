# SPDX-License-Identifier: GPL-3.0-or-later
"""The threading policy: the audit's own threads, and OpenBLAS's kept asleep.

Our threads.  numpy releases the GIL inside its array kernels (BLAS products, ``bincount``,
``take``, ufunc loops), so blocks of one blend run side by side on a thread pool (``run_all``)
and coarse pipelines run beside each other (``Beside``).  ``SKIN_AUDIT_THREADS`` caps the
threads (1: everything on the calling thread).

OpenBLAS's threads (the reason, stated here once; the modules that follow it say so in one
line).  numpy hands matrix products to OpenBLAS, which runs a product of at most
``GEMM_SIZE`` multiply-adds (m n k) on the calling thread and wakes its own threads for a
larger one, and a matrix-vector product of more than ``GEMV_SIZE`` numbers likewise.  Once
woken they keep spinning after the call, against our threads and the numpy work that follows
(measured 2-3x slower passes on a busy 2-core machine).  So:

- a long product is cut into blocks below those sizes (each block's rows are the same sums as
  in one product): ``bone_runs``, ``dense_blend``, ``affine.apply_affine``, the pose sweep's
  class products, ``stray_weights``;
- a product that is a loop in disguise goes through ``einsum``, which numpy computes itself
  (``symmetry.reflect_points``, the engine targets' distances);
- small matrices are never inverted one LAPACK call at a time: ``np.linalg.inv`` threads each
  tiny solve (3 to 300 ms for a Rigify rig's 706 bones with another thread of ours busy,
  against 0.3 ms on one BLAS thread; 2.8 s in all for the B-Bones' small matrices), so
  ``affine.affine_inverse`` uses cofactors.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Threads at most, whatever the machine has: the blends are bound by memory bandwidth.
MAX_THREADS = 4
#: Multiply-adds (m n k) of one product that OpenBLAS runs on the calling thread.
GEMM_SIZE = 262144
#: Numbers (rows x columns) of one matrix-vector product that OpenBLAS runs on the calling thread.
GEMV_SIZE = 2304 * 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def thread_count() -> int:
    """Threads a blend may use: ``SKIN_AUDIT_THREADS`` if set, else the cores this process may run on."""
    setting = os.environ.get("SKIN_AUDIT_THREADS", "").strip()
    if setting.isdigit() and int(setting) > 0:
        return min(int(setting), MAX_THREADS)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_THREADS))


def run_all(tasks: Sequence[Callable[[], None]]) -> None:
    """Run ``tasks`` (independent, writing disjoint outputs) and return when all are done.

    The calling thread runs the first task itself; the first exception of any task is raised
    here once every task has finished (none is left running behind the caller's back).
    """
    threads = thread_count()
    if threads == 1 or len(tasks) <= 1:
        for task in tasks:
            task()
        return
    pool = _pool_of(threads - 1)
    futures: list[Future[None]] = [pool.submit(task) for task in tasks[1:]]
    try:
        tasks[0]()
    finally:
        wait(futures)
    for future in futures:
        future.result()


def _pool_of(workers: int) -> ThreadPoolExecutor:
    """The pool with ``workers`` threads (a pool of another size is shut down: no stray threads).

    Locked: the audit's own threads (``Beside``) may ask for it at the same time."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers != workers:
            if _pool is not None:
                _pool.shutdown(wait=True)
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skin_audit")
        return _pool


def warm_up() -> None:
    """Start the pool's threads and let each allocate once, so their stacks and malloc arenas
    exist before a caller measures its memory (a batch worker's per-file limit)."""

    def allocate() -> None:
        bytearray(1 << 16)

    run_all([allocate] * thread_count())


class Beside(Generic[T]):
    """``work(*args)`` started on a thread of its own; calling this waits for its result (re-raising
    its exception) and gives the same result at every call.  With one thread allowed, ``work`` runs
    at the first call, on the caller's thread.

    For coarse, independent numpy work running while the caller does other work: numpy releases
    the GIL in its kernels, so two such pipelines share the cores.  ``work`` must not touch bpy
    (Blender's API belongs to the main thread) and must not wait on tasks it did not start; and
    the caller must ``wait`` (or call) before calling Blender itself, on every path, errors
    included: a thread of ours running while Blender evaluates has crashed it.
    """

    def __init__(self, work: Callable[..., T], *args: Any) -> None:
        self._work: Callable[[], T] | None = functools.partial(work, *args)
        self._box: list[T] = []
        self._failed: list[BaseException] = []
        self._thread: threading.Thread | None = None
        if thread_count() > 1:
            # A daemon: should a caller fail to wait, the interpreter can still exit.
            self._thread = threading.Thread(target=self._run, name="skin_audit-beside", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        work, self._work = self._work, None
        assert work is not None
        try:
            self._box.append(work())
        except BaseException as error:  # handed to the caller, who decides
            self._failed.append(error)

    def wait(self) -> None:
        """Return once the work is no longer running (whatever its outcome, which is kept)."""
        if self._thread is not None:
            self._thread.join()

    def __call__(self) -> T:
        if self._thread is None and self._work is not None:
            self._run()
        self.wait()
        if self._failed:
            raise self._failed[0]
        return self._box[0]
