"""Contract tests compile many small programs once each: XLA's optimizations cost more
compile time than they save at run time here, so they are off for this package only
(restored afterwards; the properties checked do not depend on them)."""

import jax
import pytest


@pytest.fixture(scope="package", autouse=True)
def _fast_compiles():
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    yield
    jax.config.update("jax_disable_most_optimizations", before)
