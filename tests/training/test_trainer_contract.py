"""The trainer contract, beside the env contract: for every algorithm in the registry
(``hordax.training.trainers.registry.ALGORITHMS``, so a new algorithm is covered by being
registered):

- ``train(key)`` jits, and ``jax.vmap(train)`` over keys trains independent runs, each equal
  to its own run (to float rounding: the vmapped program fuses floats differently);
- ``num_chunks`` x ``run_chunk`` from ``init(key)`` gives bitwise the ``train(key)`` state;
- the same key gives the same parameter checksum twice, another key another one.

Each algorithm runs on a small env whose actions it takes (CartPole-v1 for discrete or any
actions, Pendulum-v1 for continuous ones; a multi-agent config, ``IPPOConfig`` and its
subclasses, Debug-MultiPointMass-v0, or MPE-Simple-v0 where the config reads the env's
critic observation), with its config's defaults shrunk by :data:`SMALL` (an algorithm
without an entry runs its defaults).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import numpy as np
import pytest

import hordax
from hordax.agents.ppo import IPPOConfig
from hordax.training.config import TrainerConfig, resolve
from hordax.training.core.report import params_checksum
from hordax.training.trainers.registry import ALGORITHMS

pytestmark = pytest.mark.timeout(900)  # pql: jit_train compiled for 3 min at load ~34 on 2 cores

ENVS = {"discrete": "CartPole-v1", "any": "CartPole-v1", "continuous": "Pendulum-v1"}
TRAINER = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=4 * 8 * 4, num_chunks=2)
#: Per algorithm, config fields (nested dataclasses as dicts) that keep the programs small.
SMALL = {
    "ppo": {"num_minibatches": 2, "num_epochs": 2, "network": {"hidden_sizes": [16]}},
    "pqn": {"num_minibatches": 2, "num_epochs": 2, "network": {"hidden_sizes": [16]}},
    "pql": {"batch_size": 16, "buffer_size": 128, "beta_av": 0.5, "hidden_sizes": [16]},
    "ippo": {"num_minibatches": 2, "num_epochs": 2, "network": {"hidden_sizes": [16]}},
    "mappo": {"num_minibatches": 2, "num_epochs": 2, "network": {"hidden_sizes": [16]}},
}


def _env_id(alg) -> str:
    """The env algorithm ``alg`` trains on here (see the module docstring)."""
    cfg = alg.config()
    if isinstance(cfg, IPPOConfig):
        return "MPE-Simple-v0" if getattr(cfg, "critic_obs", False) else "Debug-MultiPointMass-v0"
    return ENVS[alg.action_space]


def _replace(cfg, fields: dict):
    """``cfg`` with ``fields`` replaced, recursing into nested dataclasses."""
    return dataclasses.replace(
        cfg,
        **{
            k: _replace(getattr(cfg, k), v) if isinstance(v, dict) else v for k, v in fields.items()
        },
    )


@functools.cache
def _setup(name: str):
    """``(trainer, jitted train)`` of algorithm ``name``."""
    alg = ALGORITHMS[name]
    env, params = hordax.make(_env_id(alg))
    agent_cfg = _replace(alg.config(), SMALL.get(name, {}))
    alg.validate(agent_cfg, TRAINER)
    trainer = alg.trainer(TRAINER, agent_cfg, env, params, resolve(TRAINER))
    return trainer, jax.jit(trainer.train)


def _leaves(state):
    return jax.tree.leaves(jax.device_get(state.agent.params))


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.slow
def test_contract__chunks_equal_train_bitwise(name):
    """``num_chunks`` x ``run_chunk`` (the host loop's program) equals ``train`` bitwise."""
    trainer, train = _setup(name)
    resolved = trainer.resolved
    assert resolved.num_chunks == 2 and resolved.chunk_updates == 2
    key = jax.random.key(0)
    full, metrics = train(key)
    state = jax.jit(trainer.init)(key)
    chunk = jax.jit(trainer.run_chunk)
    for _ in range(resolved.num_chunks):
        state, chunk_metrics = chunk(state)
    assert params_checksum(state.agent.params) == params_checksum(full.agent.params)
    assert int(full.update_idx) == int(state.update_idx) == resolved.num_updates
    for k, v in metrics.items():
        assert v.shape[0] == resolved.num_updates, k
        np.testing.assert_array_equal(v[-resolved.chunk_updates :], chunk_metrics[k], err_msg=k)


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.slow
def test_contract__same_key_same_checksum_other_key_differs(name):
    _, train = _setup(name)
    a = params_checksum(train(jax.random.key(1))[0].agent.params)
    b = params_checksum(train(jax.random.key(1))[0].agent.params)
    c = params_checksum(train(jax.random.key(2))[0].agent.params)
    assert a == b != c


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.slow
def test_contract__vmap_over_keys_equals_separate_runs(name):
    """``jax.vmap(train)`` over 3 keys trains 3 independent runs, each equal to its own."""
    trainer, train = _setup(name)
    keys = jax.random.split(jax.random.key(5), 3)
    batched, metrics = jax.jit(jax.vmap(trainer.train))(keys)
    assert all(v.shape[:2] == (3, trainer.resolved.num_updates) for v in metrics.values())
    singles = [_leaves(train(keys[i])[0]) for i in range(3)]
    for i in range(3):
        got = _leaves(jax.tree.map(lambda x, i=i: x[i], batched))
        for a, b in zip(got, singles[i], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert any(  # the two runs differ: the comparison can fail
        not np.allclose(a, b) for a, b in zip(singles[0], singles[1], strict=True)
    )
