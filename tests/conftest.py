"""Test setup: 8 host devices for sharding tests must be requested before jax is imported.

Each test process (each xdist worker) also gets its own, initially empty, JAX compilation
cache directory, inherited by the ``hordax train`` subprocesses the CLI tests start: a
resumed run or a second run of the same config then loads the program the first run
compiled instead of compiling it again (about 30% of tests/training/test_checkpoint.py's
time). Nothing is carried between sessions; the directory is removed at exit.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_MODE", "offline")

if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="hordax-test-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
