"""Test setup: 8 host devices for sharding tests must be requested before jax is imported;
compiled programs are released before the process runs out of memory mappings.

No persistent compilation cache: with jax 0.9.2, loading a cached XLA:CPU executable logs a
machine-feature mismatch on this very machine ("could lead to execution errors such as
SIGILL"), and one fresh-clone run with a per-session cache had a subprocess die of SIGSEGV.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_MODE", "offline")


import gc  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402


def _map_limit() -> int | None:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):  # not Linux
        return None


def _map_count() -> int:
    with open("/proc/self/maps", "rb") as f:
        return f.read().count(b"\n")


#: Release compiled programs above this many memory mappings (60 % of the kernel's limit).
_RELEASE_AT = None if _map_limit() is None else int(0.6 * _map_limit())


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """Every XLA:CPU executable holds ~7-25 memory mappings (its code and data sections) for
    as long as JAX caches it. A test process that compiles thousands of programs (the env
    contract suite: ~10 programs per check per env) reaches Linux's ``vm.max_map_count``
    (65,530 by default); XLA's next compile then dies of SIGSEGV or SIGABRT. So, near that
    limit, drop JAX's caches (the executables go with them, and later tests recompile what
    they need); measured: 100 small programs hold ~2,170 mappings, 72 after clearing."""
    yield
    if _RELEASE_AT is not None and _map_count() > _RELEASE_AT:
        jax.clear_caches()
        gc.collect()
