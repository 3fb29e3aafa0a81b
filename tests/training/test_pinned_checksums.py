"""Pinned results of short runs: the same config and seed give the same parameters (checksum)
and the same final metrics as the recorded literals, through the host loop that the CLI uses.

The literals were recorded from main before the training package was reorganized (issue
#13); a refactor that changes what a run computes fails here. A deliberate change of the
math updates the literals in the same commit, saying why.
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

import hordax
from hordax.agents.networks import NetworkConfig
from hordax.agents.ppo import PPOConfig
from hordax.agents.pql import PQLConfig
from hordax.agents.pqn import PQNConfig, QNetworkConfig
from hordax.training.config import (
    EnsembleConfig,
    EnvConfig,
    PopulationConfig,
    TrainConfig,
    TrainerConfig,
)
from hordax.training.host.loop import train_and_log
from hordax.training.trainers import validate

pytestmark = pytest.mark.timeout(300)

SMALL = NetworkConfig(hidden_sizes=[16])


def _trainer(num_envs: int, rollout: int, updates: int, chunks: int) -> TrainerConfig:
    return TrainerConfig(
        num_envs=num_envs,
        rollout_length=rollout,
        total_env_steps=num_envs * rollout * updates,
        num_chunks=chunks,
    )


CASES = {
    "ppo_cartpole": TrainConfig(
        env=EnvConfig(id="CartPole-v1"),
        agent=PPOConfig(num_minibatches=2, num_epochs=2, network=SMALL),
        trainer=_trainer(4, 16, 4, 2),
        seed=3,
    ),
    "ppo_pendulum_normalized": TrainConfig(
        env=EnvConfig(id="Pendulum-v1", params={"max_steps_in_episode": 24}),
        agent=PPOConfig(
            num_minibatches=2,
            num_epochs=2,
            normalize_obs=True,
            normalize_reward=True,
            network=SMALL,
        ),
        trainer=_trainer(4, 16, 4, 2),
        seed=1,
    ),
    "ppo_cartpole_gru": TrainConfig(
        env=EnvConfig(id="CartPole-v1"),
        agent=PPOConfig(
            num_minibatches=2,
            num_epochs=1,
            network=dataclasses.replace(SMALL, rnn_size=8),
        ),
        trainer=_trainer(4, 8, 4, 2),
        seed=2,
    ),
    "pqn_cartpole": TrainConfig(
        env=EnvConfig(id="CartPole-v1"),
        agent=PQNConfig(num_minibatches=2, network=QNetworkConfig(hidden_sizes=[16])),
        trainer=_trainer(4, 16, 4, 2),
        seed=4,
    ),
    "pql_pendulum_sync": TrainConfig(
        env=EnvConfig(id="Pendulum-v1", params={"max_steps_in_episode": 10}),
        agent=PQLConfig(batch_size=16, buffer_size=256, beta_av=1.0, hidden_sizes=[16]),
        trainer=_trainer(4, 4, 6, 2),
        seed=5,
    ),
    "ppo_population_2": TrainConfig(
        env=EnvConfig(id="CartPole-v1"),
        agent=PPOConfig(num_minibatches=2, num_epochs=1, network=SMALL),
        trainer=_trainer(4, 16, 2, 2),
        population=PopulationConfig(size=2, hparams={"learning_rate": [1e-3, 3e-4]}),
        seed=6,
    ),
    "mixed_ppo_pqn": TrainConfig(
        env=EnvConfig(id="CartPole-v1"),
        agent=PPOConfig(num_minibatches=2, num_epochs=1, network=SMALL),
        trainer=_trainer(4, 8, 2, 2),
        ensemble=EnsembleConfig(
            enabled=True,
            algorithms=["ppo", "pqn"],
            sizes=[1, 1],
            agents={"pqn": {"network": {"hidden_sizes": [16]}, "num_minibatches": 2}},
        ),
        population=PopulationConfig(size=2),
        seed=7,
    ),
}

#: name -> (params_checksum, final_return, final_episode_length, last metrics row without its
#: timings (wall_s, sps)).
PINNED: dict[str, tuple] = {
    "ppo_cartpole": (
        "456b7c39a368061e",
        21.6,
        21.6,
        {
            "chunk": 1,
            "env_steps": 256,
            "episodes": 5.0,
            "approx_kl": 4.98257577419281e-08,
            "clip_frac": 0.0,
            "entropy": 0.6931349039077759,
            "episode_length": 21.6,
            "episode_return": 21.6,
            "grad_norm": 3.7141647338867188,
            "loss": 9.097047805786133,
            "policy_loss": -3.101350739598274e-05,
            "value_loss": 18.208019256591797,
        },
    ),
    "ppo_pendulum_normalized": (
        "2fe2c4dfbb575a7d",
        -172.4384307861328,
        24.0,
        {
            "chunk": 1,
            "env_steps": 256,
            "episodes": 4.0,
            "approx_kl": 1.5832483768463135e-07,
            "clip_frac": 0.0,
            "entropy": 1.419774055480957,
            "episode_length": 24.0,
            "episode_return": -172.4384307861328,
            "grad_norm": 1.0951056480407715,
            "loss": 0.4036528468132019,
            "policy_loss": -3.8935337215662e-05,
            "value_loss": 0.8357790112495422,
        },
    ),
    "ppo_cartpole_gru": (
        "2966ba5d26aa1ba2",
        27.5,
        27.5,
        {
            "chunk": 1,
            "env_steps": 128,
            "episodes": 2.0,
            "approx_kl": 3.725290298461914e-09,
            "clip_frac": 0.0,
            "entropy": 0.6931470632553101,
            "episode_length": 27.5,
            "episode_return": 27.5,
            "grad_norm": 3.333577871322632,
            "loss": 4.483126640319824,
            "policy_loss": 2.1364539861679077e-06,
            "value_loss": 8.980111122131348,
        },
    ),
    "pqn_cartpole": (
        "ccf30b295c2bd770",
        14.777777777777779,
        14.777777777777779,
        {
            "chunk": 1,
            "env_steps": 256,
            "episodes": 9.0,
            "episode_length": 14.777777777777779,
            "episode_return": 14.777777777777779,
            "epsilon": 0.050000011920928955,
            "grad_norm": 12.425698280334473,
            "loss": 2.7412405014038086,
        },
    ),
    # Re-pinned with PQL's n-step windows running across rollouts (issue #18 item 11): the
    # first rollout's last n - 1 = 2 steps wait for the second, so the buffer holds 8 rows
    # fewer, and every later row has a whole 3-step return.
    "pql_pendulum_sync": (
        "1c5c29ee81724f43",
        -65.0913314819336,
        10.0,
        {
            "chunk": 1,
            "env_steps": 96,
            "episodes": 4.0,
            "actor_grad_norm": 0.007391495164483786,
            "actor_loss": 0.01496425736695528,
            "actor_updates": 10.0,
            "buffer_size": 72.0,
            "critic_grad_norm": 32.969993591308594,
            "critic_loss": 412.1606140136719,
            "critic_updates": 20.0,
            "episode_length": 10.0,
            "episode_return": -65.0913314819336,
            "q": -0.011060147546231747,
        },
    ),
    "ppo_population_2": (
        "edffeb4664467b27",
        27.0,
        27.0,
        {
            "chunk": 1,
            "env_steps": 128,
            "episode_return": 27.0,
            "members": [
                {
                    "episodes": 2.0,
                    "approx_kl": 4.76837158203125e-07,
                    "clip_frac": 0.0,
                    "entropy": 0.6931232213973999,
                    "episode_length": 24.5,
                    "episode_return": 24.5,
                    "grad_norm": 4.090606689453125,
                    "loss": 9.254026412963867,
                    "policy_loss": 9.547919034957886e-05,
                    "value_loss": 18.521724700927734,
                },
                {
                    "episodes": 2.0,
                    "approx_kl": 1.6763806343078613e-08,
                    "clip_frac": 0.0,
                    "entropy": 0.6931455135345459,
                    "episode_length": 27.0,
                    "episode_return": 27.0,
                    "grad_norm": 3.758744239807129,
                    "loss": 9.320838928222656,
                    "policy_loss": -1.6713514924049377e-05,
                    "value_loss": 18.655574798583984,
                },
            ],
        },
    ),
    "mixed_ppo_pqn": (
        "29aba5ead2f972e1",
        13.333333333333334,
        13.333333333333334,
        {
            "chunk": 1,
            "env_steps": 64,
            "episode_return": 13.333333333333334,
            "members": [
                {
                    "algorithm": "ppo",
                    "episodes": 1.0,
                    "approx_kl": 3.166496753692627e-08,
                    "clip_frac": 0.0,
                    "entropy": 0.6931419372558594,
                    "episode_length": 10.0,
                    "episode_return": 10.0,
                    "grad_norm": 2.657433032989502,
                    "loss": 4.193462371826172,
                    "policy_loss": -6.467103958129883e-05,
                    "value_loss": 8.40091609954834,
                },
                {
                    "algorithm": "pqn",
                    "episodes": 3.0,
                    "episode_length": 13.333333333333334,
                    "episode_return": 13.333333333333334,
                    "epsilon": 0.050000011920928955,
                    "grad_norm": 8.51905632019043,
                    "loss": 1.8623369932174683,
                },
            ],
        },
    ),
}

TIMINGS = ("wall_s", "sps")


def run_case(name: str, run_dir: str) -> tuple:
    """Train case ``name`` through the host loop; its pinned tuple."""
    cfg = dataclasses.replace(CASES[name], progress=False, run_dir=run_dir)
    env, params = hordax.make(cfg.env.id, params=dict(cfg.env.params))
    summary = train_and_log(cfg, env, params, validate(cfg))
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        last = json.loads(f.readlines()[-1])
    row = {k: v for k, v in last.items() if k not in TIMINGS}
    return (
        summary["params_checksum"],
        summary["final_return"],
        summary["final_episode_length"],
        row,
    )


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.slow
def test_pinned__checksum_and_final_metrics(name, tmp_path):
    got = run_case(name, str(tmp_path))
    want = PINNED[name]
    assert got[0] == want[0], f"{name}: params_checksum {got[0]} != pinned {want[0]}"
    assert_close(got[1:], want[1:], name)


def assert_close(got, want, where: str) -> None:
    """Equal structure, equal strings, numbers within float32 rounding of the printed value."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{where}: keys differ"
        for k in want:
            assert_close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(want), f"{where}: length"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-12, nan_ok=True), where
    else:
        assert got == want, where
