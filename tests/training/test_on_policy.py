"""The PPO trainer: chunked == one scan, determinism, vmapped seeds, bootstrapping wiring."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.agents.ppo import PPOConfig
from hordax.training.config import TrainerConfig
from hordax.training.core.report import params_checksum
from hordax.training.trainers import make_train
from hordax.training.trainers.ppo import PPOTrainer

TRAINER = TrainerConfig(num_envs=4, rollout_length=16, total_env_steps=4 * 16 * 6, num_chunks=3)
AGENT = PPOConfig(num_minibatches=2, num_epochs=2)


@pytest.fixture(scope="module")
def trainer():
    env, params = hordax.make("CartPole-v1")
    return PPOTrainer(TRAINER, AGENT, env, params)


@pytest.fixture(scope="module")
def train_fn(trainer):
    return jax.jit(trainer.train)


@pytest.mark.slow
def test_train__chunked_run_equals_single_scan(trainer, train_fn):
    """3 chunks of 2 updates on the host give bitwise the params of train(key)."""
    key = jax.random.key(0)
    full, metrics = train_fn(key)
    chunk = jax.jit(trainer.run_chunk, static_argnums=1)
    state = jax.jit(trainer.init)(key)
    for _ in range(trainer.resolved.num_chunks):
        state, _ = chunk(state, trainer.resolved.chunk_updates)
    assert trainer.resolved.num_updates == 6
    assert params_checksum(state.agent.params) == params_checksum(full.agent.params)
    assert int(full.update_idx) == 6 and metrics["loss"].shape == (6,)


@pytest.mark.slow
def test_train__same_seed_same_checksum_other_seed_differs(train_fn):
    a = params_checksum(train_fn(jax.random.key(1))[0].agent.params)
    b = params_checksum(train_fn(jax.random.key(1))[0].agent.params)
    c = params_checksum(train_fn(jax.random.key(2))[0].agent.params)
    assert a == b != c


@pytest.mark.slow
def test_train__vmapped_seeds_equal_separate_runs(trainer, train_fn):
    """jax.vmap(train) over 3 keys trains 3 independent agents, each equal to its own run."""
    keys = jax.random.split(jax.random.key(5), 3)
    batched, metrics = jax.jit(jax.vmap(trainer.train))(keys)
    assert metrics["loss"].shape == (3, 6)
    for i in range(3):
        single, _ = train_fn(keys[i])
        got = jax.tree.map(lambda x, i=i: x[i], batched.agent.params)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(single.agent.params), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_train__amortized_resets_match_in_step_resets(trainer, train_fn):
    """The default env stack (VecEnv with a reset pool of 1 for 4 envs) trains as the in-step
    reset path (trainer.reset_pool=0) does, over 3 seeds: same episode counts and lengths,
    returns and params to float rounding (same draws; the programs fuse floats differently)."""
    assert trainer.env.amortized and trainer.env.reset_pool == 1
    env, params = hordax.make("CartPole-v1")
    plain = PPOTrainer(dataclasses.replace(TRAINER, reset_pool=0), AGENT, env, params)
    assert not plain.env.amortized
    plain_fn = jax.jit(plain.train)
    for seed in range(3):
        (a, ma), (b, mb) = train_fn(jax.random.key(seed)), plain_fn(jax.random.key(seed))
        assert float(ma["episode_count"].sum()) >= 10  # resets happened
        for name in ("episode_count", "episode_length_sum"):
            np.testing.assert_array_equal(ma[name], mb[name])
        np.testing.assert_allclose(ma["episode_return_sum"], mb["episode_return_sum"], rtol=1e-6)
        for x, y in zip(
            jax.tree.leaves(a.agent.params), jax.tree.leaves(b.agent.params), strict=True
        ):
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_make_train__is_the_pure_train_function():
    env, params = hordax.make("CartPole-v1")
    train = make_train(TRAINER, AGENT, env, params)
    state, metrics = jax.jit(train)(jax.random.key(0))
    assert int(state.update_idx) == 6
    assert np.isfinite(np.asarray(metrics["loss"])).all()


@pytest.mark.parametrize(
    "trainer_cfg, agent_cfg, named",
    [
        (dataclasses.replace(TRAINER, num_envs=0), AGENT, "trainer.num_envs=0"),
        (dataclasses.replace(TRAINER, total_env_steps=10), AGENT, "trainer.total_env_steps=10"),
        (TRAINER, dataclasses.replace(AGENT, clip_eps=-0.2), "agent.clip_eps=-0.2"),
        (TRAINER, dataclasses.replace(AGENT, num_minibatches=7), "agent.num_minibatches=7"),
    ],
)
def test_make_train__bad_config_from_python_names_the_key(trainer_cfg, agent_cfg, named):
    """Configs built in Python get the checks `hordax train` runs (no traceback from jit)."""
    env, params = hordax.make("CartPole-v1")
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        make_train(trainer_cfg, agent_cfg, env, params)


@pytest.mark.timeout(120)
def test_make_train__of_hordax_training_trainers_builds_any_algorithm():
    """``hordax.training.trainers.make_train`` (the README's) with a ``PQNConfig`` or
    ``PQLConfig``: that algorithm's train(key) (it built PPO from any config: AttributeError
    'PQNConfig' object has no attribute 'gae_lambda'); PQL's parallel mode is named."""
    from hordax.agents.pql import PQLConfig
    from hordax.agents.pqn import PQNConfig

    env, params = hordax.make("CartPole-v1")
    tcfg = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64, num_chunks=1)
    state, metrics = jax.jit(make_train(tcfg, PQNConfig(num_minibatches=2), env, params))(
        jax.random.key(0)
    )
    assert int(state.update_idx) == 2 and np.isfinite(np.asarray(metrics["loss"])).all()
    pendulum, p_params = hordax.make("Pendulum-v1")
    parallel = PQLConfig(batch_size=16, buffer_size=64, mode="parallel")
    with pytest.raises(ValueError, match=r"^agent.mode='parallel': make_train needs one jitted"):
        make_train(tcfg, parallel, pendulum, p_params)
    with pytest.raises(ValueError, match=r"^agent.q_lambda=2.0: must be in \[0, 1\]"):
        make_train(tcfg, PQNConfig(q_lambda=2.0), env, params)


@pytest.mark.slow
def test_update__bootstraps_from_final_observation_on_truncation(monkeypatch, trainer):
    """The value targets use V(info['final_observation']) rows at truncated steps.

    With max_steps_in_episode=3 every 3rd step truncates; we capture compute_gae's
    next_value argument and compare it with the critic evaluated on every final observation
    (what the trainer computed before it reused the rollout's values).
    """
    import hordax.training.trainers.ppo as op

    env, params = hordax.make("CartPole-v1", max_steps_in_episode=3)
    tr = PPOTrainer(TRAINER, AGENT, env, params)
    captured = {}
    real_gae = op.compute_gae

    def spy(reward, value, next_value, terminated, truncated, gamma, lam):
        captured.update(next_value=next_value, truncated=truncated)
        return real_gae(reward, value, next_value, terminated, truncated, gamma, lam)

    monkeypatch.setattr(op, "compute_gae", spy)
    real_rollout = op.rollout

    def rollout_spy(*args, **kwargs):
        out = real_rollout(*args, **kwargs)
        captured["transitions"] = out[2]
        return out

    monkeypatch.setattr(op, "rollout", rollout_spy)
    state = tr.init(jax.random.key(0))
    tr.update(state)
    trn = captured["transitions"]
    assert bool(jnp.any(trn.truncated)), "max_steps=3 must truncate inside a 16-step rollout"
    T, B = trn.reward.shape
    # more truncations than the B rows one round of bootstrap_values evaluates
    assert int(jnp.sum(trn.truncated)) > B
    expect = tr.agent.value(state.agent, trn.next_obs.reshape((T * B, -1))).reshape((T, B))
    # V(s_{t+1}) of every step GAE bootstraps from (all but terminations, whose next value
    # it multiplies by 0) is the critic on the true next observation
    used = ~np.asarray(trn.terminated)
    got = np.asarray(captured["next_value"])
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got[used], np.asarray(expect)[used], rtol=1e-5, atol=1e-6)
    args = (trn.reward, trn.extras["value"])
    flags = (trn.terminated, trn.truncated, AGENT.gamma, AGENT.gae_lambda)
    for a, b in zip(real_gae(*args, got, *flags), real_gae(*args, expect, *flags), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # At truncated steps the next obs is the pre-reset one, not the next row's reset obs.
    t, b = map(int, np.argwhere(np.asarray(trn.truncated))[0])
    if t + 1 < T:
        assert not np.allclose(trn.next_obs[t, b], trn.obs[t + 1, b])
