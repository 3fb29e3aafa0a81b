"""Test setup: 8 host devices for sharding tests must be requested before jax is imported.

No persistent compilation cache: with jax 0.9.2, loading a cached XLA:CPU executable logs a
machine-feature mismatch on this very machine ("could lead to execution errors such as
SIGILL"), and one fresh-clone run with a per-session cache had a subprocess die of SIGSEGV.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_MODE", "offline")
