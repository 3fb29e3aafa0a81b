"""Evaluation of multi-agent PPO runs (``agent=ippo``/``mappo``): the saved team agent
(per-team parameters, per-team normalizer statistics) as an evaluation policy.

- a trained IPPO agent on Debug-MultiPointMass-v0 evaluates above a threshold that random
  play does not reach (both measured on the same evaluation episodes);
- evaluating the saved agent (through ``params.msgpack``'s format) equals a hand loop over the
  same episodes that acts with the trainer's own agent and the normalizer's formula;
- agents that finish on their first step (Debug-MultiPointMass, a goal radius they start
  in) keep that step's reward, bonus included, and count as active: no NaN mean;
- ``hordax train`` (its ``eval`` block) and ``hordax eval`` on a MAPPO run of a two-team env
  (MPE-SimpleTag-v0) give per-team returns, deterministic by default, the same numbers for
  the same episodes.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from flax import serialization
from test_eval import (  # the CLI in a subprocess, as the single-agent eval tests run it
    _cli,
    _zero_policy,
    still_masses_returns,
)

from hordax.agents.ppo import IPPOConfig
from hordax.envs.registry import make
from hordax.envs.wrappers import ClipAction
from hordax.envs.wrappers.normalize import normalize, slot_stats
from hordax.training.config import TrainerConfig
from hordax.training.config.train import TrainConfig
from hordax.training.evaluation.episodes import Policy, episode_keys, episode_stats, make_runner
from hordax.training.evaluation.run import Evaluator
from hordax.training.trainers.ppo import PPOTrainer

EPISODES, STEPS = 32, 50


@pytest.fixture(scope="module")
def ippo_run():
    """IPPO on 3 point masses, 15,360 env steps (reaches every goal; ~1 min of compiling
    on a loaded 2-core machine)."""
    env, params = make("Debug-MultiPointMass-v0", params={"max_steps_in_episode": STEPS})
    tc = TrainerConfig(num_envs=16, rollout_length=32, total_env_steps=16 * 32 * 30, num_chunks=1)
    ac = IPPOConfig(
        learning_rate=3e-3,
        num_minibatches=4,
        ent_coef=0.0,
        normalize_obs=True,
        normalize_reward=True,
    )
    trainer = PPOTrainer(tc, ac, env, params)
    state, _ = jax.jit(trainer.train)(jax.random.key(0))
    # The saved agent as hordax train writes it and hordax eval reads it back.
    blob = serialization.msgpack_serialize(
        serialization.to_state_dict(jax.device_get(trainer.saved_agent(state)))
    )
    saved = serialization.msgpack_restore(blob)
    cfg = TrainConfig(agent=ac, trainer=tc)
    evaluator = Evaluator(cfg, env, params, EPISODES, seed=0)
    return env, params, trainer, state, saved, evaluator, evaluator(saved)


def _random_policy(space) -> Policy:
    p = Policy()
    p.initial_carry = lambda n: ()
    p.act = lambda params, st, carry, obs, first, key: (
        jax.random.uniform(key, (obs.shape[0], *space.shape), minval=-1.0, maxval=1.0),
        carry,
    )
    return p


@pytest.mark.timeout(300)
def test_agents_finishing_on_their_first_step_keep_its_reward():
    """Still masses and a goal radius of 2 (most start inside it): an agent that arrives on
    step 1 is masked in the state that step returns, yet its return is that step's reward
    (``success_bonus - distance``), it counts as active, and the episodes where every agent
    arrived at once (length 1) give a finite mean: the closed-form returns."""
    steps = 20
    env, params = make(
        "Debug-MultiPointMass-v0", params={"max_steps_in_episode": steps, "goal_radius": 2.0}
    )
    keys = episode_keys(0, 8)
    run = make_runner(env, params, _zero_policy(env.action_space(params)), steps)
    out = jax.device_get(run(None, None, keys))
    want, length = still_masses_returns(env, params, keys, steps)
    assert np.sum(length == 1) >= 4, length  # every agent arrived on step 1 in these
    np.testing.assert_array_equal(out["length"], length)
    np.testing.assert_allclose(out["return"], want, rtol=1e-5, atol=1e-4)
    first = length == 1
    assert np.all(out["return"][first] > params.success_bonus - 2.0)  # bonus - d, d < 2
    np.testing.assert_array_equal(out["active"], np.ones_like(out["active"]))
    st = episode_stats(out, env.team_index, env.team_names)
    assert np.isfinite(st["return"]["mean"]) and np.all(np.isfinite(st["return"]["ci95"]))
    np.testing.assert_allclose(st["return"]["mean"], want.mean(), rtol=1e-5)
    np.testing.assert_allclose(st["team_return"]["agent"]["mean"], want.mean(), rtol=1e-5)


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_trained_ippo_evaluates_above_threshold_random_play_does_not(ippo_run):
    env, params, _, _, _, evaluator, res = ippo_run
    run = make_runner(env, params, _random_policy(env.action_space(params)), STEPS)
    rand = episode_stats(jax.device_get(run(None, None, episode_keys(0, EPISODES))))
    # Measured (seed 0): trained 2.5 [1.3, 3.7] (arrival bonuses of 10 included), success
    # 0.98; random -51 [-56, -45], success 0.07.
    threshold = -20.0
    assert res["episodes"] == EPISODES and res["deterministic"] is True
    assert res["return"]["ci95"][0] > threshold, res["return"]
    assert rand["return"]["ci95"][1] < threshold, rand["return"]
    assert res["metrics"]["success"]["mean"] >= 0.9, res["metrics"]["success"]
    assert rand["metrics"]["success"]["mean"] < 0.5, rand["metrics"]["success"]
    assert set(res["team_return"]) == set(env.team_names)


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_eval_equals_hand_loop_with_the_trainers_policy(ippo_run):
    """The same episodes by hand: reset/step keys as the evaluation seed space defines them,
    observations normalized with the live run's per-team statistics by the normalizer's
    formula, actions from the trainer's own ``TeamAgent.act_greedy`` on its train state; an
    agent's reward counts iff it was active in the state it acted in (``env.agent_mask`` of
    the state before the step, docs/env_protocol.md), so its arrival step's bonus counts."""
    env, params, trainer, state, _, evaluator, _ = ippo_run
    out = evaluator.last_outs[0]
    stats = trainer.saved_agent(state)["normalizer"]["obs_stats"]
    mean, var = slot_stats(stats, env.team_index)  # [n, D]: each slot its team's
    act = jax.jit(lambda obs: trainer.agent.act_greedy(state.agent, normalize(obs, mean, var)))
    step = jax.jit(ClipAction(env).step)
    arrivals = 0
    keys = episode_keys(0, EPISODES)
    for i in range(4):
        k_reset, k_loop = jax.random.split(keys[i])
        obs, s = ClipAction(env).reset(k_reset, params)
        total, active = np.zeros(env.num_agents), np.zeros(env.num_agents, bool)
        length = 0
        while length < STEPS:
            length += 1
            k_loop, k_step = jax.random.split(k_loop)
            mask = np.asarray(env.agent_mask(s, params))  # the state the agents act in
            obs, s, r, term, trunc, info = step(k_step, s, act(obs), params)
            total += np.where(mask, np.asarray(r), 0.0)
            active |= mask
            arrivals += int(np.sum(mask & ~np.asarray(info["agent_mask"])))
            if term or trunc:
                break
        assert int(out["length"][i]) == length
        np.testing.assert_allclose(out["return"][i], total, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(out["active"][i], active)
        for name, v in info["metrics"].items():
            np.testing.assert_allclose(out["metrics"][name][i], v, rtol=1e-6)
    assert arrivals > 0  # some agent arrived: its arrival step's reward was compared


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_cli__mappo_two_teams_train_eval_block_and_hordax_eval_json(tmp_path):
    """A MAPPO run of MPE-SimpleTag-v0 (teams ``adversary`` x3, ``agent`` x1; critic
    observations; agent ids): the summary's ``eval`` block and ``hordax eval``'s JSON carry
    the return, per-team returns and task metrics, deterministic by default and reproducible
    (``hordax eval`` of the saved agent on the same 4 episodes gives exactly the train-time
    block's numbers); ``deterministic=false`` samples MAPPO's policy."""
    run = tmp_path / "run"
    train = [
        "train",
        "env.id=MPE-SimpleTag-v0",
        "agent=mappo",
        "agent.agent_id=true",
        "agent.normalize_obs=true",
        "agent.num_minibatches=2",
        "trainer.num_envs=8",
        "trainer.rollout_length=16",
        "trainer.total_env_steps=1024",
        "trainer.num_chunks=1",
        "eval.episodes=4",
        "progress=false",
        f"hydra.run.dir={run}",
    ]
    proc = _cli(train, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    block = json.loads(proc.stdout.strip().splitlines()[-1])["eval"]
    assert block["episodes"] == 4 and block["deterministic"] is True
    assert set(block["team_return"]) == {"adversary", "agent"}
    last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["eval/return"] == block["return"]["mean"]
    rows = []
    for extra in ([], ["deterministic=false", f"out={tmp_path / 'sampled.json'}"]):
        proc = _cli(["eval", str(run), "episodes=4", *extra], tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    greedy, sampled = rows
    assert greedy["agent"] == "mappo" and greedy["deterministic"] is True
    assert greedy["episodes"] == 4 and set(greedy["team_return"]) == {"adversary", "agent"}
    for key in ("return", "team_return", "episode_length", "terminated", "metrics", "steps"):
        assert greedy[key] == block[key], key  # the same seed's episodes, evaluated twice
    for team in greedy["team_return"].values():
        assert np.isfinite(team["mean"]) and len(team["ci95"]) == 2
    assert set(greedy["metrics"]) == set(block["metrics"]) and greedy["metrics"]
    assert json.loads((run / "eval.json").read_text())["return"] == greedy["return"]
    assert sampled["deterministic"] is False
    assert sampled["return"]["mean"] != greedy["return"]["mean"]
