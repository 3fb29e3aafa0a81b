"""Sharded training on 8 host devices (conftest sets the device count before jax starts).

- a PPO run with the env batch split over 8 devices equals the 1-device run (same seed);
- the shardings declared for the train state are the ones its arrays actually have;
- a population of 8 split over the ``seed`` axis equals 8 separate runs, member i being the
  run with seed + i and its own learning rate;
- multi-agent PPO (MAPPO with two teams and a centralized critic, MPE-SimpleTag-v0) with the
  env batch split over 8 devices equals the 1-device run.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import hordax
from hordax.agents.ppo import MAPPOConfig, PPOConfig
from hordax.training.config import MeshConfig, PopulationConfig, TrainConfig, TrainerConfig
from hordax.training.host import sharding
from hordax.training.host.programs import make_programs
from hordax.training.trainers import make_trainer, validate

pytestmark = pytest.mark.skipif(
    jax.device_count() < 8, reason="needs 8 host devices (tests/conftest.py sets XLA_FLAGS)"
)

BASE = TrainConfig(
    trainer=TrainerConfig(num_envs=16, rollout_length=8, total_env_steps=16 * 8 * 4, num_chunks=2),
    agent=PPOConfig(num_minibatches=2, num_epochs=2, normalize_obs=True),
    seed=3,
)


def _run(cfg: TrainConfig, env_id: str = "CartPole-v1"):
    """Init + all chunks through the same programs the CLI uses; (state, metrics, programs)."""
    env, params = hordax.make(env_id)
    resolved = validate(cfg)
    progs = make_programs(cfg, make_trainer(cfg, env, params, resolved))
    state = progs.init(*progs.init_args)
    chunks = []
    for _ in range(resolved.num_chunks):
        state, metrics = progs.chunk(state)
        chunks.append(jax.device_get(metrics))
    metrics = jax.tree.map(lambda *xs: np.concatenate(xs, axis=-1), *chunks)
    return state, metrics, progs


def _mesh(seed: int, data: int) -> MeshConfig:
    return MeshConfig(name=f"seed{seed}_data{data}", seed=seed, data=data)


@pytest.fixture(scope="module")
def one_and_eight():
    one = _run(dataclasses.replace(BASE, mesh=_mesh(1, 1)))
    eight = _run(dataclasses.replace(BASE, mesh=_mesh(1, 8)))
    return one, eight


@pytest.mark.slow
def test_sharded__8_devices_equal_1_device(one_and_eight):
    """Same seed: losses, returns and final params agree within float tolerance."""
    (s1, m1, p1), (s8, m8, p8) = one_and_eight
    assert p1.mesh.devices.size == 1 and p8.mesh.devices.size == 8
    for name in ("loss", "value_loss", "entropy", "episode_return_sum", "episode_count"):
        np.testing.assert_allclose(m8[name], m1[name], rtol=2e-3, atol=1e-4, err_msg=name)
    for a, b in zip(
        jax.tree.leaves(s8.agent.params), jax.tree.leaves(s1.agent.params), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-5)
    # Normalizer statistics are reduced across all 8 shards, not per device.
    np.testing.assert_allclose(
        s8.env_state.obs_stats.mean, s1.env_state.obs_stats.mean, rtol=1e-4, atol=1e-5
    )


@pytest.mark.slow
def test_sharded__declared_shardings_are_the_actual_ones(one_and_eight):
    """Env batch split over 'data' (2 envs per device), agent and key replicated."""
    _, (state, _, progs) = one_and_eight
    declared = jax.tree.leaves(progs.shardings)
    actual = [x.sharding for x in jax.tree.leaves(state)]
    assert len(declared) == len(actual)
    for d, a, x in zip(declared, actual, jax.tree.leaves(state), strict=True):
        assert a.is_equivalent_to(d, x.ndim), (a, d, x.shape)
    obs = state.obs
    assert obs.sharding.spec == P("data") and len(obs.sharding.device_set) == 8
    assert {s.data.shape for s in obs.addressable_shards} == {(2, *obs.shape[1:])}
    for leaf in jax.tree.leaves(state.agent.params):
        assert leaf.sharding.is_fully_replicated


LRS = [1e-4, 2e-4, 3e-4, 5e-4, 1e-3, 2e-3, 3e-3, 5e-3]


@pytest.fixture(scope="module")
def population_run():
    cfg = dataclasses.replace(
        BASE,
        mesh=_mesh(8, 1),
        population=PopulationConfig(size=8, hparams={"learning_rate": LRS}),
    )
    return _run(cfg)


def test_population__split_over_seed_axis(population_run):
    """Every leaf has a leading member axis of 8, one member per device."""
    state, metrics, progs = population_run
    assert dict(progs.mesh.shape) == {"seed": 8, "data": 1}
    assert metrics["loss"].shape == (8, 4)
    for leaf in jax.tree.leaves(state.agent.params):
        assert leaf.shape[0] == 8 and leaf.sharding.spec[0] == "seed"
        assert {s.data.shape[0] for s in leaf.addressable_shards} == {1}
    np.testing.assert_allclose(np.asarray(state.agent.hparams["learning_rate"]), LRS, rtol=1e-6)


@pytest.mark.parametrize("member", [0, 5])
@pytest.mark.slow
def test_population__member_equals_its_separate_run(population_run, member):
    """Member i == a plain run with seed 3 + i and learning rate LRS[i]."""
    state, metrics, _ = population_run
    cfg = dataclasses.replace(
        BASE,
        mesh=_mesh(1, 1),
        seed=BASE.seed + member,
        agent=dataclasses.replace(BASE.agent, learning_rate=LRS[member]),
    )
    single, m1, _ = _run(cfg)
    np.testing.assert_allclose(metrics["loss"][member], m1["loss"], rtol=2e-3, atol=1e-4)
    got = jax.tree.map(lambda x: np.asarray(x)[member], state.agent.params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(single.agent.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-5)


def test_mesh__bad_shapes_name_the_key():
    """A seed axis that does not divide the population, or too many devices, is refused."""
    with pytest.raises(ValueError, match=r"mesh.seed=3: must divide population.size=8"):
        sharding.make_mesh(_mesh(3, 1), population=8)
    with pytest.raises(ValueError, match=r"needs 16 devices, 8 available"):
        sharding.make_mesh(_mesh(2, 8), population=2)
    with pytest.raises(ValueError, match=r"mesh.data=3: must divide trainer.num_envs=16"):
        sharding.train_mesh(_mesh(1, 3), num_envs=16)
    auto = sharding.train_mesh(MeshConfig(), num_envs=4096, population=4)
    assert dict(auto.shape) == {"seed": 4, "data": 2}


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_sharded__multi_agent_8_devices_equal_1_device():
    """MAPPO on MPE-SimpleTag-v0 (teams adversary/agent with their own parameters, a critic on
    the global state, agent masks): the env batch over 8 devices gives the 1-device run's
    losses, per-team returns and parameters (the agent axis stays inside each env's shard)."""
    cfg = dataclasses.replace(
        BASE, agent=MAPPOConfig(num_minibatches=2, num_epochs=2, normalize_obs=True)
    )
    s1, m1, p1 = _run(dataclasses.replace(cfg, mesh=_mesh(1, 1)), "MPE-SimpleTag-v0")
    s8, m8, p8 = _run(dataclasses.replace(cfg, mesh=_mesh(1, 8)), "MPE-SimpleTag-v0")
    assert p1.mesh.devices.size == 1 and p8.mesh.devices.size == 8
    for obs in jax.tree.leaves(s8.obs):  # the actor's and the critic's observations
        assert obs.sharding.spec == P("data") and len(obs.sharding.device_set) == 8
    team_keys = [k for k in m1 if k.startswith("team/")]
    assert team_keys, sorted(m1)  # per-team returns are reported
    for name in ("loss", "value_loss", "episode_return_sum", "episode_count", *team_keys):
        np.testing.assert_allclose(m8[name], m1[name], rtol=2e-3, atol=1e-4, err_msg=name)
    leaves1, leaves8 = jax.tree.leaves(s1.agent.params), jax.tree.leaves(s8.agent.params)
    assert len(leaves1) == len(leaves8)
    for a, b in zip(leaves8, leaves1, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-5)
