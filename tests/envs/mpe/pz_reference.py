"""Run PettingZoo's MPE (the ``mpe2`` package) on given action sequences and record it.

The loop drives mpe2's ``raw_env`` the way its own AEC ``step`` does once every agent has
acted: each agent's action goes into ``current_actions`` and ``_execute_world_step()`` moves
the world and computes the rewards. Skipping the AEC/parallel plumbing (agent selection,
dict building, per-agent ``observe`` calls) makes the loop about twice as fast;
``test_pettingzoo_reference.py`` checks that it equals mpe2's public ``parallel_env``.
"""

from __future__ import annotations

import importlib
from typing import Any

import jax.numpy as jnp
import mpe2  # noqa: F401  (the reference; the dev extra installs it)
import numpy as np

from hordax.envs.mpe.world import MPEState

#: hordax scenario name -> mpe2 module.
MODULES = {
    "Simple": "simple_v3",
    "SimpleAdversary": "simple_adversary_v3",
    "SimpleCrypto": "simple_crypto_v3",
    "SimplePush": "simple_push_v3",
    "SimpleReference": "simple_reference_v3",
    "SimpleSpeakerListener": "simple_speaker_listener_v4",
    "SimpleSpread": "simple_spread_v3",
    "SimpleTag": "simple_tag_v3",
    "SimpleWorldComm": "simple_world_comm_v3",
}


def make_reference(name: str, continuous: bool, parallel: bool = False) -> Any:
    """mpe2's ``raw_env`` (or, with ``parallel``, its public ``parallel_env``)."""
    module = importlib.import_module(f"mpe2.{MODULES[name]}")
    make = module.parallel_env if parallel else module.raw_env
    return make(continuous_actions=continuous)


def _index(obj: Any, items: list) -> int:
    return next(i for i, x in enumerate(items) if x is obj)


def goals(name: str, world: Any) -> list[int]:
    """The scenario's random choices at reset, as hordax's ``state.goal`` holds them."""
    marks = world.landmarks
    if name in ("SimpleAdversary", "SimplePush"):
        return [_index(world.agents[0].goal_a, marks)]
    if name == "SimpleCrypto":  # [goal landmark, key landmark] (the key is a landmark colour)
        key = next(i for i, m in enumerate(marks) if m.color is world.agents[2].key)
        return [_index(world.agents[0].goal_a, marks), key]
    if name == "SimpleReference":
        return [_index(world.agents[0].goal_b, marks), _index(world.agents[1].goal_b, marks)]
    if name == "SimpleSpeakerListener":
        return [_index(world.agents[0].goal_b, marks)]
    return []


def snapshot(world: Any) -> dict[str, np.ndarray]:
    """The world's state in float64: agent ``pos``/``vel``/``comm`` and ``landmarks``."""
    agents = world.agents
    return {
        "pos": np.array([a.state.p_pos for a in agents], np.float64),
        "vel": np.array([a.state.p_vel for a in agents], np.float64),
        "comm": np.array([a.state.c for a in agents], np.float64).reshape(len(agents), world.dim_c),
        "landmarks": np.array([m.state.p_pos for m in world.landmarks], np.float64).reshape(-1, 2),
    }


def round_to_float32(world: Any) -> None:
    """Round the world's state (positions, velocities, utterances) to float32 values, in place
    (mpe2 keeps computing in float64)."""
    for agent in world.agents:
        for attr in ("p_pos", "p_vel", "c"):
            value = getattr(agent.state, attr)
            setattr(agent.state, attr, np.asarray(value, np.float32).astype(np.float64))
    for mark in world.landmarks:
        mark.state.p_pos = np.asarray(mark.state.p_pos, np.float32).astype(np.float64)


def run(
    name: str,
    continuous: bool,
    actions: np.ndarray,
    widths: tuple[int, ...],
    width: int,
    float32_state: bool = True,
) -> dict[str, np.ndarray]:
    """Replay ``actions`` (``[B, T, n]`` ints or ``[B, T, n, A]`` floats) in mpe2; sequence
    ``b`` starts from ``reset(seed=b)``.

    With ``float32_state``, the state is rounded to float32 before every step
    (:func:`round_to_float32`): hordax stores float32, so both then start each step from the
    same numbers and differ only by the arithmetic inside the step. The recorded states,
    observations and rewards after a step are mpe2's float64 results, before that rounding.

    Returns float64 arrays: the initial state (``init_*``, ``goal [B, G]``) and, after every
    step, ``pos``/``vel`` ``[B, T, n, 2]``, ``comm [B, T, n, dim_c]``, ``obs [B, T, n, width]``
    (each agent's observation zero-padded to ``width``) and ``reward [B, T, n]``.
    """
    ref = make_reference(name, continuous)
    world, scenario = ref.world, ref.scenario
    num_seq, num_steps, n = actions.shape[:3]
    out: dict[str, list] = {k: [] for k in ("init", "goal", "state", "obs", "reward")}
    for b in range(num_seq):
        ref.reset(seed=b)
        if float32_state:
            round_to_float32(world)
        out["init"].append(snapshot(world))
        out["goal"].append(goals(name, world))
        states, obs, rewards = [], [], []
        for t in range(num_steps):
            if float32_state:
                round_to_float32(world)
            for i in range(n):
                a = actions[b, t, i]
                ref.current_actions[i] = a[: widths[i]].copy() if continuous else int(a)
            ref._execute_world_step()
            states.append(snapshot(world))
            own = [scenario.observation(agent, world) for agent in world.agents]
            obs.append(np.stack([np.pad(o, (0, width - len(o))) for o in own]))
            rewards.append([ref.rewards[a] for a in ref.agents])
        out["state"].append(states)
        out["obs"].append(obs)
        out["reward"].append(rewards)
    result = {f"init_{k}": np.stack([s[k] for s in out["init"]]) for k in out["init"][0]}
    for k in out["init"][0]:
        result[k] = np.array([[s[k] for s in seq] for seq in out["state"]])
    result["goal"] = np.array(out["goal"], np.int64).reshape(num_seq, -1)
    result["obs"] = np.array(out["obs"], np.float64)
    result["reward"] = np.array(out["reward"], np.float64)
    return result


def hordax_states(init: dict[str, np.ndarray], time: np.ndarray | int = 0) -> MPEState:
    """A (batched) hordax state holding a recorded mpe2 state, rounded to float32."""
    f32 = lambda k: jnp.asarray(init[k], jnp.float32)  # noqa: E731
    pos = f32("pos")
    return MPEState(
        time=jnp.broadcast_to(jnp.asarray(time, jnp.int32), pos.shape[:-2]),
        pos=pos,
        vel=f32("vel"),
        landmarks=f32("landmarks"),
        comm=f32("comm"),
        goal=jnp.asarray(init["goal"], jnp.int32),
    )
