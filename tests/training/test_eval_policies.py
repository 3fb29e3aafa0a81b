"""Evaluation of every kind of saved agent, in process: PPO (feed-forward, recurrent, sampled),
PQL, a population's members, a trading split's held-out episode, and a GIF of the first
episode. Untrained (freshly initialized) agents: these check the plumbing, not learning."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from ensemble_helpers import PrivilegedPointMass
from PIL import Image

from hordax.agents.ppo import PPOConfig
from hordax.agents.pql import PQLConfig
from hordax.envs.registry import make
from hordax.training.config import TrainConfig
from hordax.training.evaluation.run import Evaluator, eval_env
from hordax.training.trainers.ppo import agent_obs_shape
from hordax.training.trainers.registry import algorithm


def _saved(cfg, env, params, seeds=(0,)):
    """A saved agent as params.msgpack holds it (stacked [K] for a population)."""
    agent = algorithm(cfg.agent.name).make_agent(
        cfg.agent, env.observation_space(params).shape, env.action_space(params), 1
    )
    ps = [agent.init(jax.random.key(s)).params for s in seeds]
    if len(seeds) == 1:
        return {"params": ps[0], "normalizer": {}}
    return {"params": jax.tree.map(lambda *x: np.stack(x), *ps), "normalizer": {}}


def _cfg(env_id, agent):
    cfg = TrainConfig(agent=agent)
    cfg.env.id = env_id
    return cfg


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("agent", "deterministic"),
    [
        (PPOConfig(), True),
        (PPOConfig(), False),
        (PPOConfig(network=dataclasses.replace(PPOConfig().network, rnn_size=8)), True),
        (PPOConfig(network=dataclasses.replace(PPOConfig().network, rnn_size=8)), False),
        (PQLConfig(), True),
    ],
    ids=["ppo", "ppo-sampled", "gru", "gru-sampled", "pql"],
)
@pytest.mark.slow
def test_evaluator__every_agent_kind_runs_whole_episodes(agent, deterministic):
    env, params = make("Debug-PointMass-v0")
    cfg = _cfg("Debug-PointMass-v0", agent)
    ev = Evaluator(cfg, env, params, episodes=4, seed=3, deterministic=deterministic)
    saved = _saved(cfg, env, params)
    res = ev(saved)
    assert res["episodes"] == 4 and set(res["metrics"]) == {"success", "distance"}
    assert 1 <= res["episode_length"]["mean"] <= params.max_steps_in_episode
    again = ev(saved)  # reproducible; compiled once
    assert again["return"] == res["return"] and again["compile_s"] == 0.0


@pytest.mark.timeout(300)
def test_evaluator__population_members_and_pooled():
    env, params = make("Debug-PointMass-v0")
    cfg = _cfg("Debug-PointMass-v0", PPOConfig())
    cfg.population.size = 2
    res = Evaluator(cfg, env, params, episodes=3, seed=0)(_saved(cfg, env, params, (0, 1)))
    assert res["episodes"] == 6 and [m["episodes"] for m in res["members"]] == [3, 3]
    pooled = np.mean([m["return"]["mean"] for m in res["members"]])
    assert res["return"]["mean"] == pytest.approx(pooled)
    assert res["members"][0]["return"] != res["members"][1]["return"]
    # the seed-to-seed spread: an interval over the 2 members' means, not over 6 episodes
    across = res["across_members"]
    assert across["members"] == 2 and across["return"]["mean"] == pytest.approx(pooled)
    member_means = [m["return"]["mean"] for m in res["members"]]
    assert across["return"]["std"] == pytest.approx(np.std(member_means, ddof=1))
    success = [m["metrics"]["success"]["mean"] for m in res["members"]]
    assert across["metrics"]["success"]["mean"] == pytest.approx(np.mean(success))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("deterministic", [True, False], ids=["greedy", "sampled"])
def test_evaluator__asymmetric_critic_run_evaluates_as_its_actor(deterministic):
    """A PPO agent trained with ``agent.critic_obs=true`` (the hand tasks' tuned configs)
    evaluates (its critic takes the 4 critic entries, not the 6 observation entries), and
    its episodes are those of a plain PPO agent holding the same actor: the actor acts."""
    env = PrivilegedPointMass()
    params = env.default_params
    asym = _cfg("Debug-PointMass-v0", PPOConfig(critic_obs=True))
    agent = algorithm("ppo").make_agent(
        asym.agent, agent_obs_shape(asym.agent, env, params), env.action_space(params), 1
    )
    saved = {"params": agent.init(jax.random.key(1)).params, "normalizer": {}}
    fan_in = {x.shape[0] for x in jax.tree.leaves(saved["params"]["critic"]) if x.ndim == 2}
    assert 4 in fan_in and 6 not in fan_in
    res = Evaluator(asym, env, params, episodes=4, seed=2, deterministic=deterministic)(saved)
    plain_cfg = _cfg("Debug-PointMass-v0", PPOConfig())
    plain = _saved(plain_cfg, env, params)
    plain["params"] = {**plain["params"], "actor": saved["params"]["actor"]}
    ref = Evaluator(plain_cfg, env, params, episodes=4, seed=2, deterministic=deterministic)(plain)
    assert res["return"] == ref["return"]
    assert res["episode_length"] == ref["episode_length"]


@pytest.mark.timeout(300)
def test_evaluator__video_gif_of_the_first_episode(tmp_path):
    env, params = make("Debug-PointMass-v0")
    cfg = _cfg("Debug-PointMass-v0", PPOConfig())
    ev = Evaluator(cfg, env, params, episodes=2, seed=0)
    saved = _saved(cfg, env, params)
    ev(saved)
    path = str(tmp_path / "ep.gif")
    frames = ev.video(saved, path, 1, 20)
    assert frames == int(ev.last_outs[0]["length"][0]) + 1  # the reset frame and each step
    with Image.open(path) as im:
        assert im.n_frames >= 2  # PIL merges identical consecutive frames


@pytest.mark.timeout(300)
def test_eval_env__trading_split_is_the_backtests_full_split_episode():
    env, params, cap = eval_env("StockTrading-v0", {}, {}, "test")
    cfg = _cfg("StockTrading-v0", PPOConfig())
    res = Evaluator(cfg, env, params, episodes=2, seed=0, max_steps=cap)(_saved(cfg, env, params))
    assert res["episode_length"]["mean"] == cap - 1  # from the split's first row to its end
    assert res["return"]["std"] == 0.0  # deterministic policy, fixed start: the same episode
    with pytest.raises(ValueError, match="split='test': env CartPole-v1 has no held-out"):
        eval_env("CartPole-v1", {}, {}, "test")
