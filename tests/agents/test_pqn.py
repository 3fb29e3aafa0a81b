"""PQN: Q(lambda) targets against a Python loop, epsilon schedule, LayerNorm Q-network and
the `hordax train agent=pqn` path (JSON line, checkpoints, errors); its learning run on
CartPole: tests/training/test_trainer_learning.py."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.agents.pqn import PQNConfig, make_agent
from hordax.envs.registry import make
from hordax.training.config import TrainConfig, TrainerConfig
from hordax.training.core.estimators import compute_q_lambda
from hordax.training.trainers import validate
from hordax.training.trainers.pqn import PQNTrainer


def q_lambda_reference(reward, next_q, terminated, truncated, gamma, lam):
    """Peng's Q(lambda) one env at a time, written as the recursive definition."""
    T, B = reward.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in reversed(range(T)):
            if terminated[t, b]:
                out[t, b] = reward[t, b]
            elif truncated[t, b] or t == T - 1:
                out[t, b] = reward[t, b] + gamma * next_q[t, b]
            else:
                mixed = (1 - lam) * next_q[t, b] + lam * out[t + 1, b]
                out[t, b] = reward[t, b] + gamma * mixed
    return out


@pytest.mark.parametrize("gamma,lam", [(0.99, 0.65), (0.9, 1.0), (0.97, 0.0)])
def test_q_lambda__matches_python_loop_with_truncation_and_termination(gamma, lam):
    rng = np.random.default_rng(1)
    T, B = 13, 4
    reward, next_q = (rng.normal(size=(T, B)).astype(np.float32) for _ in range(2))
    terminated = rng.random((T, B)) < 0.1
    truncated = (rng.random((T, B)) < 0.1) & ~terminated
    # A truncation and a termination inside the window of env 0, both at the end of env 1.
    terminated[4, 0], truncated[8, 0] = True, True
    terminated[T - 1, 1], truncated[T - 1, 2] = True, True
    got = compute_q_lambda(
        jnp.asarray(reward),
        jnp.asarray(next_q),
        jnp.asarray(terminated),
        jnp.asarray(truncated),
        gamma,
        lam,
    )
    want = q_lambda_reference(reward, next_q, terminated, truncated, gamma, lam)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    # Spot checks of the two episode ends in env 0.
    assert np.isclose(got[4, 0], reward[4, 0])
    assert np.isclose(got[8, 0], reward[8, 0] + gamma * next_q[8, 0])


def test_q_lambda__lambda_zero_is_one_step_q_learning():
    rng = np.random.default_rng(2)
    r, q = rng.normal(size=(6, 3)).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    term = np.zeros((6, 3), bool)
    term[2, 1] = True
    got = compute_q_lambda(r, q, term, np.zeros_like(term), 0.9, 0.0)
    np.testing.assert_allclose(got, r + 0.9 * q * (1 - term), rtol=1e-6)


@functools.cache
def _cartpole_agent(num_updates=100):
    env, params = make("CartPole-v1")
    cfg = PQNConfig(epsilon_start=1.0, epsilon_finish=0.1, epsilon_decay=0.5)
    return make_agent(cfg, env.observation_space(params).shape, env.action_space(params), 100)


def test_pqn__epsilon_decays_linearly_then_stays():
    agent = _cartpole_agent()
    state = agent.init(jax.random.key(0))
    eps = [float(agent.epsilon(state.replace(update=jnp.int32(u)))) for u in (0, 25, 50, 99)]
    np.testing.assert_allclose(eps, [1.0, 0.55, 0.1, 0.1], atol=1e-6)


def test_pqn__q_network_has_layer_norm_and_acts_epsilon_greedy():
    agent = _cartpole_agent()
    state = agent.init(jax.random.key(0))
    names = set(state.params["params"])
    assert {"LayerNorm_0", "LayerNorm_1"} <= names
    obs = jax.random.normal(jax.random.key(1), (4096, 4))
    greedy = agent.act_greedy(state, obs)
    late = state.replace(update=jnp.int32(99))  # epsilon 0.1: ~ 0.1 * (1 - 1/2) differ
    a, _ = agent.act(late, obs, jax.random.key(2))
    differ = float(jnp.mean(a != greedy))
    assert 0.03 < differ < 0.07, differ
    a0, _ = agent.act(state, obs, jax.random.key(2))  # epsilon 1: ~ half differ
    assert 0.4 < float(jnp.mean(a0 != greedy)) < 0.6


def test_pqn__rejects_continuous_actions():
    env, params = make("Pendulum-v1")
    with pytest.raises(ValueError, match="Discrete"):
        make_agent(PQNConfig(), (3,), env.action_space(params), 1)


# --- the CLI path -----------------------------------------------------------------------
# The bad-config errors of `hordax train agent=pqn ...` are checked with the other CLI errors
# in tests/training/test_cli.py (BAD_INPUT), all in one driver process.


def _run_cli(args, cwd):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", "train", "progress=false", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_cli__pqn_runs_checkpoints_and_resumes(tmp_path):
    """`hordax train agent=pqn`: JSON line, run files, checkpoints; resume continues them."""
    args = [
        "agent=pqn",
        "trainer.num_envs=8",
        "trainer.rollout_length=8",
        "trainer.total_env_steps=2048",
        "trainer.num_chunks=4",
        "checkpoint.every=2",
    ]
    summary = _run_cli(args, tmp_path)
    run_dir = Path(summary["run_dir"])
    assert summary["agent"] == "pqn" and summary["env"] == "CartPole-v1"
    assert summary["env_steps"] == 2048 and np.isfinite(summary["final_return"])
    assert {"metrics.jsonl", "params.msgpack", "summary.json", "checkpoints"} <= {
        p.name for p in run_dir.iterdir()
    }
    # Resume from the newest checkpoint (after the last chunk) reproduces the parameters.
    again = _run_cli([f"resume={run_dir}"], tmp_path)
    assert again["resumed_from_chunk"] == 4
    assert again["params_checksum"] == summary["params_checksum"]


@pytest.mark.slow
def test_pqn__population_member_equals_single_run():
    """vmapped init/chunk over members with per-member learning rates: member i computes
    what a separate run with that seed and that learning rate *in its config* computes (so
    a population that ignored its per-member rates would fail: the rates differ 100x)."""
    from hordax.training.trainers.population import PopulationTrainer

    tcfg = TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=48, num_chunks=1)
    env, params = make("CartPole-v1")
    rates = [1e-4, 1e-2]

    def trainer_with(lr):
        acfg = PQNConfig(num_minibatches=2, num_epochs=1, learning_rate=lr)
        resolved = validate(TrainConfig(agent=acfg, trainer=tcfg))
        return PQNTrainer(tcfg, acfg, env, params, resolved), resolved.num_updates

    trainer, num_updates = trainer_with(rates[0])
    population = PopulationTrainer(trainer, 2, 3, {"learning_rate": rates})
    state = population.init(population.init_key(3))
    state, _ = population.run_chunk(state, num_updates)
    np.testing.assert_allclose(state.agent.hparams["learning_rate"], rates)
    moved = []
    for i, lr in enumerate(rates):
        single_trainer, _ = trainer_with(lr)
        init = single_trainer.init(jax.random.key(3 + i))
        single, _ = single_trainer.run_chunk(init, num_updates)
        pairs = zip(
            jax.tree.leaves(single.agent.params), jax.tree.leaves(state.agent.params), strict=True
        )
        for a, b in pairs:
            np.testing.assert_allclose(a, b[i], rtol=2e-4, atol=2e-5)
        delta = jax.tree.map(
            lambda x, y: np.abs(np.asarray(x) - np.asarray(y)).max(),
            single.agent.params,
            init.agent.params,
        )
        moved.append(max(jax.tree.leaves(delta)))
    assert moved[1] > 10 * moved[0], moved  # the larger rate moved the weights further
