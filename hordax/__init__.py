"""hordax: thousands of RL environments on one accelerator, trained in one jitted program.

    import hordax
    env, params = hordax.make("CartPole-v1")

Attributes are imported lazily, so ``import hordax.training.cli`` can configure XLA's
devices before jax (via gymnax) initializes.
"""

from typing import Any

from hordax._deferred import defer as _defer

_defer()  # gymnax's render-only imports (seaborn, pyplot): half of every start-up

__version__ = "0.1.0"

_LAZY = {"make", "register", "registered_envs", "to_gymnasium"}

__all__ = ["__version__", "make", "register", "registered_envs", "to_gymnasium"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from hordax import envs

        return getattr(envs, name)
    raise AttributeError(f"module 'hordax' has no attribute {name!r}")
