"""Ensemble combination rules and the side-by-side evaluator, on hand-made members."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ensemble_helpers import output_layer

import hordax
from hordax.agents.ppo import PPOConfig, make_agent
from hordax.envs.wrappers import NormalizeObservation, VecEnv
from hordax.envs.wrappers.normalize import RunningStats
from hordax.training import ensemble as E  # noqa: N812

pytestmark = pytest.mark.timeout(120)


# --- weights ------------------------------------------------------------------------------


def test_weights__positive_clips_and_normalizes():
    w = np.asarray(E.member_weights([1.0, -1.0, 3.0, np.nan], "positive"))
    np.testing.assert_allclose(w, [0.25, 0.0, 0.75, 0.0], atol=1e-7)


def test_weights__positive_falls_back_to_equal_when_nothing_is_positive():
    w = np.asarray(E.member_weights([-1.0, 0.0, -3.0], "positive"))
    np.testing.assert_allclose(w, [1 / 3] * 3, atol=1e-7)


def test_weights__softmax_and_equal():
    s = np.array([0.5, 1.5, -0.2])
    w = np.asarray(E.member_weights(s, "softmax", temperature=0.5))
    ref = np.exp(s / 0.5) / np.exp(s / 0.5).sum()
    np.testing.assert_allclose(w, ref, rtol=1e-6)
    w_nan = np.asarray(E.member_weights([np.nan, 1.0], "softmax"))
    np.testing.assert_allclose(w_nan, [0.0, 1.0], atol=1e-7)
    np.testing.assert_allclose(np.asarray(E.member_weights(s, "equal")), [1 / 3] * 3)


def test_validate_ensemble__names_the_key():
    with pytest.raises(ValueError, match="ensemble.weighting='best'"):
        E.validate_ensemble(E.EnsembleConfig(weighting="best"))
    with pytest.raises(ValueError, match="ensemble.window=0"):
        E.validate_ensemble(E.EnsembleConfig(window=0))
    with pytest.raises(ValueError, match="ensemble.score"):
        E.validate_ensemble(E.EnsembleConfig(score="sortino"))


# --- vote and average -----------------------------------------------------------------------


def test_vote__majority_wins():
    vote = jax.jit(E.majority_vote, static_argnums=1)
    assert int(vote(jnp.array([2, 0, 2, 1]), 3)) == 2
    assert int(vote(jnp.array([1, 1, 0]), 3, jnp.array([0.1, 0.1, 0.8]))) == 1  # count first


def test_vote__ties_go_to_heavier_voters_then_lowest_action():
    assert int(E.majority_vote(jnp.array([0, 2]), 3, jnp.array([0.3, 0.7]))) == 2
    assert int(E.majority_vote(jnp.array([2, 0]), 3, jnp.array([0.5, 0.5]))) == 0
    assert int(E.majority_vote(jnp.array([2, 1, 1, 2]), 3)) == 1


def test_weighted_average():
    acts = jnp.array([[1.0, -1.0], [0.0, 1.0], [-1.0, 0.5]])
    out = E.weighted_average(acts, jnp.array([0.5, 0.25, 0.25]))
    np.testing.assert_allclose(np.asarray(out), [0.25, -0.125], atol=1e-7)


# --- rolling selection ----------------------------------------------------------------------


def test_rolling__hand_case():
    # window 2: member 1 is better over steps 0-1, member 0 over steps 2-3.
    r = jnp.array([[0.0, 1.0], [0.1, 1.2], [1.0, 0.0], [1.2, 0.1], [0.0, 0.0], [0.0, 0.0]])
    choices = np.asarray(E.rolling_choices(r, window=2, initial=0))
    np.testing.assert_array_equal(choices, [0, 0, 1, 1, 0, 0])


def _rolling_reference(r: np.ndarray, window: int, initial: int) -> np.ndarray:
    out = []
    for t in range(r.shape[0]):
        j = t // window
        if j == 0:
            out.append(initial)
            continue
        w = r[(j - 1) * window : j * window].astype(np.float64)
        std = w.std(axis=0)
        sharpe = np.where(std > 1e-12, w.mean(0) / np.where(std > 1e-12, std, 1), 0.0)
        out.append(int(np.argmax(sharpe)))
    return np.array(out)


def test_rolling__matches_reference_and_never_looks_ahead():
    rng = np.random.default_rng(0)
    r = rng.normal(0.01, 1.0, size=(40, 4)).astype(np.float32)
    roll = jax.jit(E.rolling_choices, static_argnums=1)
    base = np.asarray(roll(jnp.asarray(r), 5, 3))
    np.testing.assert_array_equal(base, _rolling_reference(r, 5, 3))
    assert len(set(base.tolist())) > 1  # the case is not trivial
    for t in (0, 4, 5, 13, 39):
        future = r.copy()
        future[t:] = rng.normal(0.0, 5.0, size=future[t:].shape)
        got = np.asarray(roll(jnp.asarray(future), 5, 3))
        np.testing.assert_array_equal(got[: t + 1], base[: t + 1])  # step t acts before r[t]


# --- members ------------------------------------------------------------------------------


def _agent(env_id: str):
    env, params = hordax.make(env_id)
    cfg = PPOConfig()
    cfg.network.hidden_sizes = [8]
    agent = make_agent(cfg, env.observation_space(params).shape, env.action_space(params), 1)
    return env, params, agent


def _constant_members(agent, outputs: np.ndarray) -> E.Members:
    """Members whose actor ignores the observation: logits / mean = ``outputs[k]``."""
    members = []
    for i, out in enumerate(outputs):
        p = agent.init(jax.random.key(i)).params
        head = output_layer(p["actor"])
        head["kernel"] = jnp.zeros_like(head["kernel"])
        head["bias"] = jnp.asarray(out, jnp.float32)
        members.append(p)
    return E.Members(jax.tree.map(lambda *x: np.stack(x), *members), None)


def test_greedy_policy__normalizes_like_the_wrapper():
    env, params, agent = _agent("CartPole-v1")
    members = _constant_members(agent, np.eye(2))
    stats = RunningStats(jnp.array([0.1, -0.2, 0.3, 0.0]), jnp.array([2.0, 0.5, 1.0, 4.0]), 1.0)
    wrapper = NormalizeObservation(VecEnv(env, 1))
    obs = jnp.array([3.0, -50.0, 0.3, 1.0])
    seen = {}

    def spy(state, o):  # record what the actor sees
        seen["obs"] = o
        return agent.act_greedy(state, o)

    class Spy:
        act_greedy = staticmethod(spy)

    p0 = jax.tree.map(lambda x: x[0], members.params)
    E.greedy_policy(Spy())(p0, {"mean": stats.mean, "var": stats.var}, obs)
    np.testing.assert_allclose(seen["obs"][0], wrapper._normalize(obs, stats), rtol=1e-6)


@functools.cache
def _cartpole():
    env, params, agent = _agent("CartPole-v1")
    # members 0 and 2 push right (action 1), member 1 pushes left.
    members = _constant_members(agent, np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))
    return env, params, members, E.make_evaluator(env, params, agent, members, 40)


def test_evaluator__vote_follows_the_majority_and_rolling_starts_with_initial():
    env, params, members, evaluate = _cartpole()
    out = jax.device_get(evaluate(jax.random.key(0), jnp.full((3,), 1 / 3), jnp.int32(1), 100))
    reward, alive = out["reward"], out["alive"]
    # The pushes tell the members apart (else the equalities below would hold for any run).
    assert not np.array_equal(alive[:, 0], alive[:, 1])
    # The vote (run 3) acts like members 0 and 2 at every step: the same trajectory.
    np.testing.assert_array_equal(reward[:, 3], reward[:, 0])
    np.testing.assert_array_equal(alive[:, 3], alive[:, 0])
    # Rolling selection (run 4) acts with member 1 for the whole first window.
    np.testing.assert_array_equal(reward[:, 4], reward[:, 1])
    assert (out["choice"] == 1).all()
    # Pushing one way ends a CartPole episode early; counting stops there.
    assert 0 < alive[:, 0].sum() < 40 and not alive[-1].any()
    np.testing.assert_array_equal(reward[~alive], 0.0)


def test_evaluator__average_with_one_hot_weights_is_that_member():
    env, params, agent = _agent("Pendulum-v1")
    members = _constant_members(agent, np.array([[1.5], [-0.5], [0.2], [0.25]]))
    evaluate = E.make_evaluator(env, params, agent, members, 30)
    key = jax.random.key(3)
    for k in range(3):
        w = jnp.zeros(4).at[k].set(1.0)
        out = jax.device_get(evaluate(key, w, jnp.int32(0), 7))
        np.testing.assert_allclose(out["reward"][:, 4], out["reward"][:, k], rtol=1e-6)
    # Mixed weights give a new action ((1.5 - 0.5) / 2 = 0.5, (-0.5 + 0.25) / 2), so the
    # trajectory is none of the members'.
    out = jax.device_get(evaluate(key, jnp.array([0.5, 0.5, 0.0, 0.0]), jnp.int32(0), 7))
    assert not np.allclose(out["reward"][:, 4], out["reward"][:, 3])
    out = jax.device_get(evaluate(key, jnp.array([0.0, 0.5, 0.0, 0.5]), jnp.int32(0), 7))
    assert not np.allclose(out["reward"][:, 4], out["reward"][:, 1])


def test_evaluator__actions_are_clipped_before_averaging():
    env, params, agent = _agent("Pendulum-v1")
    # Member 0 asks for 6.0, clipped to Pendulum's max torque 2.0; the average with
    # member 1 (-1.0) is then 0.5, which member 2 plays alone (unclipped it would be 2.5).
    members = _constant_members(agent, np.array([[6.0], [-1.0], [0.5]]))
    evaluate = E.make_evaluator(env, params, agent, members, 30)
    out = jax.device_get(evaluate(jax.random.key(3), jnp.array([0.5, 0.5, 0.0]), jnp.int32(0), 7))
    np.testing.assert_allclose(out["reward"][:, 3], out["reward"][:, 2], rtol=1e-6)
    assert not np.allclose(out["reward"][:, 3], out["reward"][:, 0])


# --- the agent=ensemble preset ----------------------------------------------------------------


def test_agent_ensemble_preset__composes_ppo_members_and_checks_size():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from hordax.training.cli import _register_schemas, config_dir
    from hordax.training.config import ConfigError
    from hordax.training.trainers import validate

    _register_schemas()

    def composed(*overrides):
        with initialize_config_dir(str(config_dir()), version_base=None):
            node = compose("train", overrides=["agent=ensemble", *overrides])
        E.apply_members(node)
        return OmegaConf.to_object(node)

    cfg = composed("agent.learning_rate=1e-3", "ensemble.window=5")
    assert cfg.agent.name == "ppo" and cfg.agent.learning_rate == 1e-3
    assert cfg.population.size == 4 and cfg.ensemble.enabled and cfg.ensemble.window == 5
    validate(cfg)
    assert composed("ensemble.members=6").population.size == 6
    assert composed("population.size=3").population.size == 3
    with pytest.raises(ConfigError, match="ensemble.members=1: agent=ensemble needs at least 2"):
        validate(composed("ensemble.members=1"))
    with pytest.raises(ConfigError, match="agent.network.rnn_size=8: agent=ensemble combines"):
        validate(composed("agent.network.rnn_size=8"))


def test_periods_per_year__given_or_inferred_from_the_market_dates():
    """0 = bars per year of env.dates; a given value wins; 252 without dates."""
    import types

    from hordax.training.ensemble import resolve_periods_per_year

    def env_with(dates):
        return types.SimpleNamespace(dates=np.asarray(dates, "datetime64[s]"))

    hourly = np.arange(np.datetime64("2019-01-01T00"), np.datetime64("2021-01-01T00"))
    assert resolve_periods_per_year(0, env_with(hourly)) == pytest.approx(8766, rel=1e-3)
    days = np.arange(np.datetime64("2000-01-03"), np.datetime64("2010-01-01"))
    weekdays = days[np.is_busday(days)]  # stock bars: weekdays only
    assert resolve_periods_per_year(0, env_with(weekdays)) == pytest.approx(261, abs=1)
    assert resolve_periods_per_year(8760, env_with(hourly)) == 8760.0
    assert resolve_periods_per_year(0, types.SimpleNamespace()) == 252.0
    assert resolve_periods_per_year(0, env_with(hourly[:1])) == 252.0
    E.validate_ensemble(E.EnsembleConfig(periods_per_year=0.0))
    with pytest.raises(ValueError, match=r"ensemble.periods_per_year=-1.0: must be > 0, or 0"):
        E.validate_ensemble(E.EnsembleConfig(periods_per_year=-1.0))


@pytest.mark.timeout(180)
def test_ensemble__ppo_with_critic_obs_and_normalize_obs_trains_and_evaluates(
    tmp_path, monkeypatch
):
    """agent=ensemble of PPO members with ``agent.critic_obs`` and ``agent.normalize_obs``:
    the saved statistics are ``{"actor", "critic"}``; the end-of-run ensemble evaluation
    (and ``hordax backtest``'s loading) acts with the actor's, as ``hordax eval`` does."""
    from ensemble_helpers import PrivilegedPointMass
    from flax import serialization
    from gymnax import registration as gx_registration

    from hordax.envs import registry
    from hordax.training.config import TrainConfig, TrainerConfig
    from hordax.training.host.loop import train_and_log
    from hordax.training.trainers import validate

    env_id = "Test-PrivilegedPointMass-v0"
    # registered for this test only (copies of the registries, restored after it): the env
    # contract's coverage test requires every registered id to be a suite env
    monkeypatch.setattr(registry, "_HORDAX_IDS", [*registry._HORDAX_IDS])
    monkeypatch.setattr(gx_registration, "_registry", {**gx_registration._registry})
    monkeypatch.setattr(gx_registration, "registered_envs", [*gx_registration.registered_envs])
    hordax.register(env_id, PrivilegedPointMass)
    cfg = TrainConfig()
    cfg.env.id, cfg.env.params = env_id, {"max_steps_in_episode": 20}
    cfg.trainer = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64, num_chunks=1)
    cfg.agent = PPOConfig(critic_obs=True, normalize_obs=True, num_minibatches=1, num_epochs=1)
    cfg.agent.network.hidden_sizes = [8]
    cfg.population.size = 2
    cfg.ensemble = E.EnsembleConfig(enabled=True, members=2, eval_episodes=1)
    cfg.run_dir, cfg.progress = str(tmp_path), False
    env, params = hordax.make(env_id, params=cfg.env.params)
    summary = train_and_log(cfg, env, params, validate(cfg))
    summary = E.add_ensemble_to_summary(cfg, summary, cfg.run_dir)
    assert set(summary["ensemble"]["runs"]) == {
        "member_0", "member_1", "ensemble_average", "rolling_selection"
    }  # fmt: skip
    with open(tmp_path / "params.msgpack", "rb") as f:
        saved = serialization.msgpack_restore(f.read())["normalizer"]["obs_stats"]
    assert set(saved) == {"actor", "critic"} and saved["critic"]["mean"].shape == (2, 4)
    members = E.load_members(str(tmp_path / "params.msgpack"))
    assert set(members.obs_stats) == {"mean", "var"}
    np.testing.assert_array_equal(members.obs_stats["mean"], saved["actor"]["mean"])
    np.testing.assert_array_equal(members.obs_stats["var"], saved["actor"]["var"])
