"""Environments: the protocol, registry, wrappers and adapters.

Light on purpose: importing this package imports no environment family; families are
imported lazily by :func:`make`.
"""

from hordax import _exit  # noqa: F401  (waits for dispatched computations at exit)
from hordax.envs import _register  # noqa: F401, E402  (registers hordax ids, lazily)
from hordax.envs.core import Environment, EnvParams, EnvState, MultiAgentEnvironment
from hordax.envs.registry import UnknownEnvError, make, register, registered_envs


def to_gymnasium(env, num_envs: int = 1, seed: int | None = None, **make_kwargs):
    """A ``gymnasium.vector.VectorEnv`` over a hordax/gymnax env (see ``gymnasium_adapter``)."""
    from hordax.envs.gymnasium_adapter import to_gymnasium as _to_gymnasium

    return _to_gymnasium(env, num_envs=num_envs, seed=seed, **make_kwargs)


__all__ = [
    "EnvParams",
    "EnvState",
    "Environment",
    "MultiAgentEnvironment",
    "UnknownEnvError",
    "make",
    "register",
    "registered_envs",
    "to_gymnasium",
]
