"""Contract tests compile many small programs once each: XLA's optimizations cost more
compile time than they save at run time here, so they are off for this package only
(restored after each module; the properties checked do not depend on them)."""

import jax
import pytest


# Module scope, not package: tests/contract is a plain directory (no __init__.py), so a
# "package" fixture here lived until the end of the session and every later test in the
# worker process compiled without optimizations (the pinned training checksums changed).
@pytest.fixture(scope="module", autouse=True)
def _fast_compiles():
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    yield
    jax.config.update("jax_disable_most_optimizations", before)
    # jit's caches do not key on this option: a program compiled here without optimizations
    # would be reused by later tests in this process and change their float results (the
    # pinned training checksums did). Drop every compiled program.
    jax.clear_caches()
