# SPDX-License-Identifier: GPL-3.0-or-later
"""Batch audits at scale: many files, each in a worker process with its own Blender.

- ``worker``: the worker process (``python -m skin_audit.batch.worker``): imports Blender
  once, then audits the files its parent sends, one at a time, and answers each with the
  file's result on a pipe.  Also the result codec (``encode_file_audit`` and back).
- ``process``: the parent's handle on one worker: start, send a file, wait with a timeout,
  and turn a worker that dies (signal, exit, timeout, memory) into that file's error.
- ``local``: ``audit_paths_parallel``: N workers on this machine, results in input order,
  progress and a summary line on stderr.
- ``cluster``: ``audit_paths_on_cluster``: the same per-file task on an existing Dask
  cluster (``--scheduler tcp://HOST:PORT``).
- ``command_line``: the ``audit`` options (``--jobs`` ...) and the choice between workers
  and the in-process run, for ``cli.py``.

Dask is optional (``pip install skin_audit[cluster]``) and imported lazily, only by
``cluster`` when a scheduler is given.  The Blender extension needs none of this: its
command line imports ``command_line`` (argparse only), and inside a Blender executable
files are audited in-process.  docs/scale.md is the user's guide.
"""
