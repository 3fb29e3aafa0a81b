"""Helpers shared by the ensemble and backtest tests (imported by basename: pytest puts
this directory on sys.path for the test modules in it)."""

from __future__ import annotations

import jax.numpy as jnp
from gymnax.environments.spaces import Box

from hordax.envs.debug.point_mass import PointMass


def output_layer(actor_params: dict) -> dict:
    """The actor's output Dense layer (the one outside the torso), whatever its module path."""
    found = []

    def walk(node, path):
        if isinstance(node, dict) and "kernel" in node and "bias" in node:
            if not any(p.startswith(("MLP", "CNN", "GRU", "Embed")) for p in path):
                found.append(node)
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))

    walk(actor_params, ())
    assert len(found) == 1, f"expected one output layer, found {len(found)}"
    return found[0]


class PrivilegedPointMass(PointMass):
    """Debug-PointMass-v0 with a privileged critic observation (``f32[4]``: position and
    goal), as the manipulation tasks have one (``agent.critic_obs=true`` accepts it)."""

    def critic_observation(self, state, params):
        return jnp.concatenate([state.pos, state.goal]).astype(jnp.float32)

    def critic_observation_space(self, params):
        return Box(-1.0, 1.0, (4,), jnp.float32)
