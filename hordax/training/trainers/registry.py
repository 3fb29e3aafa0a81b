"""The one algorithm registry: ``agent.name`` -> :class:`~hordax.training.core.types.Algorithm`
(config schema, validator, traced hyperparameters, agent factory, inference state, trainer).

Everything that differs by algorithm is looked up here (config validation, the CLI's
schemas, populations, mixed ensembles, saved-agent loading); a new algorithm is a module
with an ``ALGORITHM`` entry, added to :data:`ALGORITHMS`.
"""

from __future__ import annotations

from hordax.training.core.types import Algorithm
from hordax.training.trainers import ppo, pql, pqn

#: Every registered algorithm, by ``agent.name``.
ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        ppo.ALGORITHM,
        pqn.ALGORITHM,
        pql.ALGORITHM,
        ppo.IPPO_ALGORITHM,
        ppo.MAPPO_ALGORITHM,
    )
}


def algorithm(name: str) -> Algorithm:
    """The registry entry of ``name``; ``ValueError`` naming ``agent.name`` otherwise."""
    if name not in ALGORITHMS:
        raise ValueError(f"agent.name={name}: allowed values are {list(ALGORITHMS)}")
    return ALGORITHMS[name]
