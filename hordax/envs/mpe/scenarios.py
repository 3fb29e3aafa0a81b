"""``make_scenario``: the registry's one entry point for the nine MPE scenarios.

Every ``MPE-*`` id is registered as ``make_scenario(scenario=...)``, so the env contract
suite (``tests/contract``, which runs its full set of checks once per registry entry point)
checks the shared machinery once; ``tests/envs/mpe`` checks every scenario's observations,
spaces, teams and rewards, and the PettingZoo reference test every scenario's dynamics.
"""

from __future__ import annotations

import importlib
import inspect

from hordax.envs.mpe import SCENARIOS
from hordax.envs.mpe.base import ParticleWorld


def make_scenario(
    scenario: str,
    continuous_actions: bool = False,
    num_agents: int | None = None,
    num_good: int | None = None,
    num_adversaries: int | None = None,
    num_obstacles: int | None = None,
    num_food: int | None = None,
    num_forests: int | None = None,
) -> ParticleWorld:
    """Build one of the nine scenarios (``hordax.envs.mpe.SCENARIOS``: ``"SimpleSpread"``,
    ...) with PettingZoo's defaults unless given.

    The size arguments apply to the scenarios that have them (``num_agents``:
    SimpleSpread; ``num_good``: SimpleAdversary, SimpleTag, SimpleWorldComm;
    ``num_adversaries``, ``num_obstacles``: SimpleTag, SimpleWorldComm; ``num_food``,
    ``num_forests``: SimpleWorldComm). Raises ``ValueError`` naming an unknown scenario or
    a size argument the scenario does not take.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario={scenario!r}: must be one of {sorted(SCENARIOS)}")
    module_name, _, attr = SCENARIOS[scenario].partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    sizes = {
        "num_agents": num_agents,
        "num_good": num_good,
        "num_adversaries": num_adversaries,
        "num_obstacles": num_obstacles,
        "num_food": num_food,
        "num_forests": num_forests,
    }
    given = {k: v for k, v in sizes.items() if v is not None}
    accepted = set(inspect.signature(cls).parameters) - {"continuous_actions"}
    unknown = sorted(set(given) - accepted)
    if unknown:
        allowed = sorted(accepted) or "none"
        raise ValueError(f"{unknown[0]}: not an option of {scenario} (its options: {allowed})")
    return cls(continuous_actions=continuous_actions, **given)
