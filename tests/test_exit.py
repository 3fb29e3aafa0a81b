"""hordax waits for dispatched computations at exit, before JAX's exit handler frees them
(hordax/_exit.py: a script that exited with its training in flight died of SIGSEGV)."""

import subprocess
import sys

import pytest

# A sentinel registered with atexit after jax and before hordax: atexit runs handlers
# last-registered first, so it runs after hordax's and before jax's own clean-up.
SCRIPT = """
import atexit, sys
import jax, jax.numpy as jnp

held = {}
atexit.register(lambda: print("ready at exit:", held["y"].is_ready(), flush=True))
if sys.argv[1] == "hordax":
    import hordax.envs  # noqa: F401

def run(x):
    return jax.lax.fori_loop(0, 2000, lambda i, x: jnp.tanh(x @ x) * 0.5, x)

x = jnp.full((256, 256), 0.01)
program = jax.jit(run).lower(x).compile()
held["y"] = program(x)
print("ready at dispatch:", held["y"].is_ready(), flush=True)
"""


def _exit_states(mode: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.timeout(240)
def test_exit__waits_for_a_computation_still_running_at_exit():
    """Dispatched and still running when the script ends: with hordax imported it is done
    before JAX's handler runs; without hordax (the control, showing the check can fail) it
    is still running then."""
    with_hordax = _exit_states("hordax")
    assert "ready at dispatch: False" in with_hordax, with_hordax
    assert "ready at exit: True" in with_hordax, with_hordax
    without = _exit_states("plain")
    assert "ready at dispatch: False" in without, without
    assert "ready at exit: False" in without, without


def test_wait_for_dispatched__no_backend_no_work():
    """Without any computation the handler starts no backend (a fresh interpreter's exit
    stays as fast as before)."""
    code = (
        "from hordax import _exit; from jax._src import xla_bridge as xb;"
        "print(_exit.wait_for_dispatched(), xb.backends_are_initialized())"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["0", "False"], proc.stdout
