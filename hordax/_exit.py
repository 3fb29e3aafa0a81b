"""Wait for dispatched computations at interpreter exit, before JAX's own exit handler.

JAX dispatches asynchronously: ``y = jax.jit(train)(key)`` returns while ``train`` still
runs on XLA's threads. A script that ends there (the README's quick start did) exits with
the program in flight, and JAX's ``atexit`` handler (``jax._src.api.clean_up``) clears the
backends and compiled-program caches under it. With jax 0.9.2 on CPU that died of SIGSEGV in
about 1 run in 10 on a loaded 2-core host (gdb: the main thread freeing memory at exit while
an ``tf_XLAEigen`` thread ran the freed program; benchmarks/RESULTS.md section 33).

Importing this module adds :func:`wait_for_dispatched` to ``atexit`` (a module runs once
per process), after ``jax`` is imported: ``atexit`` runs its handlers last-registered
first, so this one runs before JAX's. :mod:`hordax.envs` imports it, so every hordax
process has it.
"""

from __future__ import annotations

import atexit
import contextlib

import jax
from jax._src import xla_bridge


def wait_for_dispatched() -> int:
    """Block until every live array of the default backend is computed; returns how many.

    Nothing to do (and no backend started) when no computation ever ran. Arrays that were
    deleted or donated meanwhile are skipped: there is nothing of theirs left to wait for.
    """
    # a private function (jax 0.9.2): without it, live_arrays() may start a backend, which
    # only costs time
    started = getattr(xla_bridge, "backends_are_initialized", lambda: True)
    if not started():
        return 0
    arrays = jax.live_arrays()
    for array in arrays:
        # deleted or donated since live_arrays() listed it: nothing left to wait for
        with contextlib.suppress(RuntimeError):
            array.block_until_ready()
    return len(arrays)


atexit.register(wait_for_dispatched)
