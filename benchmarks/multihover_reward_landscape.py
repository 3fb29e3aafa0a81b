"""What Aerial-MultiHover-v0's reward asks for: the scripted layered policy's returns by layer.

``python benchmarks/multihover_reward_landscape.py [NAME=VALUE ...] [--episodes 256]``
``[--gamma 0.99] [--layers 0,0.2,0.35,0.45,0.6,0.8,1.0]``

Plays :func:`hordax.envs.aerial.expert.layered_velocity_action` (each drone on its own
altitude layer while far from its goal; ``layer`` m between adjacent slots) on fresh
episodes of the env with the tuned IPPO config's env params
(``hordax/configs/tuned/Aerial-MultiHover-v0_ippo.yaml``, then ``NAME=VALUE`` overrides)
and prints, per layer spacing, the mean per-agent discounted return from the first step
(what PPO maximizes, at the config's ``gamma``), the undiscounted return, the fraction of
agents crashed and ``all_success`` at the episode's end. A reward whose discounted return
barely grows from a narrow layer to a safe one gives a learner little reason to leave the
narrow one: benchmarks/RESULTS.md section 27.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import yaml

import hordax
from hordax.envs.aerial.expert import layered_velocity_action

TUNED = Path(hordax.__file__).parent / "configs" / "tuned" / "Aerial-MultiHover-v0_ippo.yaml"


def tuned_env_params() -> dict:
    """The env params of the tuned IPPO config (``env.params`` of its YAML)."""
    return dict(yaml.safe_load(TUNED.read_text())["env"]["params"])


def landscape(overrides: dict, layers: list[float], episodes: int, gamma: float, seed: int = 0):
    """``[(layer, discounted, undiscounted, crashed, all_success)]``: means over
    ``episodes`` fresh episodes (the same keys for every layer) and the env's agents."""
    env, params = hordax.make("Aerial-MultiHover-v0", params=overrides)
    steps = int(params.max_steps_in_episode)
    discount = jnp.asarray(gamma ** np.arange(steps), jnp.float32)

    @jax.jit
    def play(layer, keys):
        def episode(key):
            k_reset, k_steps = jax.random.split(key)
            obs, state = env.reset(k_reset, params)

            def step(carry, k):
                obs, state, done = carry
                action = layered_velocity_action(obs, layer=layer, max_speed=params.ctrl.max_speed)
                obs, state, reward, end, info = env.step_env(k, state, action, params)
                reward = jnp.where(done, 0.0, reward)  # nothing after the episode's end
                out = (reward, info["metrics"]["all_success"], state.crashed)
                return (obs, state, done | end), out

            keys = jax.random.split(k_steps, steps)
            _, (reward, success, crashed) = jax.lax.scan(step, (obs, state, False), keys)
            return discount @ reward, reward.sum(0), crashed[-1], success[-1]

        return jax.vmap(episode)(keys)

    keys = jax.random.split(jax.random.key(seed), episodes)
    rows = []
    for layer in layers:
        disc, total, crashed, success = jax.device_get(play(jnp.float32(layer), keys))
        rows.append((layer, disc.mean(), total.mean(), crashed.mean(), success.mean()))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("overrides", nargs="*", help="env params NAME=VALUE over the tuned ones")
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--layers", default="0,0.2,0.35,0.45,0.6,0.8,1.0")
    a = ap.parse_args()
    overrides = tuned_env_params()
    for item in a.overrides:
        name, sep, value = item.partition("=")
        if not sep:
            ap.error(f"{item!r}: overrides look like NAME=VALUE")
        overrides[name] = float(value)
    layers = [float(x) for x in a.layers.split(",")]
    print(f"env params: {overrides}, gamma {a.gamma}, {a.episodes} episodes")
    print("| layer (m) | discounted return / agent | undiscounted | agents crashed | all_success |")
    print("|---:|---:|---:|---:|---:|")
    for layer, disc, total, crashed, success in landscape(overrides, layers, a.episodes, a.gamma):
        print(f"| {layer:.2f} | {disc:.1f} | {total:.1f} | {crashed:.3f} | {success:.3f} |")


if __name__ == "__main__":
    main()
