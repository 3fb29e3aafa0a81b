"""Step-for-step equivalence with PettingZoo's MPE (``mpe2`` 1.1.1, the reference).

For each of the nine scenarios, discrete and continuous actions: 200 mpe2 resets (seeds
0..199) are copied into hordax states (agent and landmark positions, velocities, utterances,
goal/key choices); one random action sequence of a full episode (25 steps) per reset is
replayed in mpe2 (plain Python, ``pz_reference.run``) and in hordax (one jitted
``vmap(scan(step_env))``). mpe2 computes in float64; its state is rounded to float32 (what
hordax stores) before every step, so both start each step from the same numbers. Compared
at every step:

- **one step from the reference's state** ("teacher forcing"): hordax's ``step_env`` applied
  to mpe2's state before step ``t`` gives mpe2's positions, velocities, utterances,
  observations and rewards after it within ``ONE_STEP`` (5e-6): float32 against float64
  arithmetic of one step.
- **the whole trajectory**: hordax's own 25-step rollout from the copied reset stays within
  ``ROLLOUT`` (1e-3) of mpe2's. Contact forces (a softplus 1e-3 wide, stiffness 100)
  amplify rounding differences by up to ~1.3 per step while agents touch, two agents almost
  on top of each other (distance ~5e-4) turn a 1e-7 position difference into a 1e-4 change
  of the contact direction, and simple_tag's boundary penalty grows like ``exp(2 |x|)``, so
  free-running trajectories drift apart to ~2e-4 over 25 steps (the measured maximum,
  simple_tag discrete sequence 199; every other scenario stays below 4e-5).
- utterances of discrete actions (one-hot words) exactly; ``terminated`` never, truncation
  exactly at step 25 (``max_cycles``).

A second test checks that the recording loop equals mpe2's public ``parallel_env`` API.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax

from . import pz_reference as ref  # imports mpe2 (the dev extra): a missing reference fails

NUM_SEQ = 200
NUM_STEPS = 25
ONE_STEP = {"rtol": 5e-6, "atol": 5e-6}  # measured max 1e-6 (relative to 1 + |value|)
ROLLOUT = {"rtol": 1e-3, "atol": 1e-3}  # measured max 2e-4 (simple_tag, discrete)
SCENARIOS = list(ref.MODULES)
KEY = jax.random.key(0)


def _make(name: str, continuous: bool):
    return hordax.make(f"MPE-{name}{'-Continuous' if continuous else ''}-v0")


def random_actions(env, params, seed: int, num_seq: int = NUM_SEQ) -> np.ndarray:
    """``[B, T, n]`` uniform discrete actions, or ``[B, T, n, A]`` uniform floats in [0, 1)
    in each agent's own entries (zeros after)."""
    rng = np.random.default_rng(seed)
    space = env.action_space(params)
    if not env.continuous_actions:
        return np.stack([rng.integers(0, k, (num_seq, NUM_STEPS)) for k in space.nvec], -1).astype(
            np.int32
        )
    actions = np.zeros((num_seq, NUM_STEPS, *space.shape), np.float32)
    for i, width in enumerate(env.layout.continuous_actions()):
        actions[:, :, i, :width] = rng.random((num_seq, NUM_STEPS, width), dtype=np.float32)
    return actions


@functools.partial(jax.jit, static_argnames=("env",))
def replay(env, params, state0, actions, before):
    """Per sequence, a scan of ``step_env`` from ``state0`` over ``actions`` (hordax's own
    trajectory) and, beside it, one ``step_env`` from each recorded reference state
    ``before[t]`` with the same action. Every leaf ``[B, T, ...]``."""

    def sequence(start, acts, refs):
        def body(state, xs):
            action, ref_state = xs
            obs, state, reward, terminated, _ = env.step_env(KEY, state, action, params)
            truncated = env.is_truncated(state, params)
            obs1, state1, reward1, _, _ = env.step_env(KEY, ref_state, action, params)
            own = {"state": state, "obs": obs, "reward": reward}
            one = {"state": state1, "obs": obs1, "reward": reward1}
            return state, (own, one, terminated, truncated)

        return jax.lax.scan(body, start, (acts, refs))[1]

    return jax.vmap(sequence)(state0, actions, before)


def _compare(what: str, got, want, tol: dict) -> None:
    np.testing.assert_allclose(np.asarray(got, np.float64), want, err_msg=what, **tol)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.slow
def test_reference__every_step_matches_mpe2(name, continuous):
    env, params = _make(name, continuous)
    width = env.observation_space(params).shape[1]
    actions = random_actions(env, params, seed=SCENARIOS.index(name))
    rec = ref.run(name, continuous, actions, env.layout.continuous_actions(), width)
    init = {k[5:]: rec[k] for k in rec if k.startswith("init_")}
    init["goal"] = rec["goal"]
    state0 = ref.hordax_states(init)
    # mpe2's state before each step: the reset, then the state after each earlier step
    before = {
        k: np.concatenate([init[k][:, None], rec[k][:, :-1]], 1) for k in ("pos", "vel", "comm")
    }
    before["landmarks"] = np.repeat(init["landmarks"][:, None], NUM_STEPS, 1)
    before["goal"] = np.repeat(init["goal"][:, None], NUM_STEPS, 1)
    before_states = ref.hordax_states(before, np.arange(NUM_STEPS)[None, :])
    own, one, terminated, truncated = jax.device_get(
        replay(env, params, state0, jnp.asarray(actions), before_states)
    )
    for label, out, tol in (("one step", one, ONE_STEP), ("rollout", own, ROLLOUT)):
        for k in ("pos", "vel", "comm"):
            _compare(f"{name} {label}: {k}", getattr(out["state"], k), rec[k], tol)
        _compare(f"{name} {label}: observations", out["obs"], rec["obs"], tol)
        _compare(f"{name} {label}: rewards", out["reward"], rec["reward"], tol)
        np.testing.assert_array_equal(out["state"].landmarks, before_states.landmarks)
        np.testing.assert_array_equal(out["state"].goal, before_states.goal)
    if not continuous:  # one-hot words: exact
        np.testing.assert_array_equal(own["state"].comm, rec["comm"])
    assert not terminated.any()
    last = np.arange(NUM_STEPS) == NUM_STEPS - 1
    np.testing.assert_array_equal(truncated, np.broadcast_to(last, truncated.shape))


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_reference__recording_loop_equals_mpe2_parallel_api(name, continuous):
    """``pz_reference.run`` (mpe2's world step called directly) records what mpe2's public
    ``parallel_env`` returns: observations, rewards, and truncation after 25 steps."""
    env, params = _make(name, continuous)
    width = env.observation_space(params).shape[1]
    actions = random_actions(env, params, seed=100, num_seq=2)
    widths = env.layout.continuous_actions()
    rec = ref.run(name, continuous, actions, widths, width, float32_state=False)
    public = ref.make_reference(name, continuous, parallel=True)
    for b in range(2):
        public.reset(seed=b)
        agents = list(public.possible_agents)
        assert agents == env.agents
        for t in range(NUM_STEPS):
            acts = {
                a: (actions[b, t, i, : widths[i]] if continuous else int(actions[b, t, i]))
                for i, a in enumerate(agents)
            }
            obs, rewards, terms, truncs, _ = public.step(acts)
            for i, a in enumerate(agents):
                own = rec["obs"][b, t, i, : len(obs[a])].astype(np.float32)  # mpe2 casts
                np.testing.assert_array_equal(obs[a], own)
                assert rewards[a] == rec["reward"][b, t, i]
            assert not any(terms.values())
            assert all(truncs.values()) == (t == NUM_STEPS - 1)
