"""Pinned results of short runs: the same config and seed give the same final parameters and
the same final metrics as the recorded literals, through the host loop that the CLI uses.

The metric literals were recorded from main before the training package was reorganized
(issue #13); a refactor that changes what a run computes fails here. A deliberate change of
the math updates the literals in the same commit, saying why (``python
tests/training/test_pinned_results.py`` prints the current values).

Why a tolerance and not the bitwise ``params_checksum``: XLA's CPU code differs with the
machine's instruction set, so the last bits of a run differ from one machine to another
(measured: this machine's AVX2 EPYC and the one the checksums were first pinned on agree on
every metric to 3e-7 relative and on near-zero ones such as ``policy_loss`` to 5e-8
absolute, and disagree on every checksum). The parameters are compared through a per-leaf
fingerprint (norm and a fixed random projection) within 1e-5 of the leaf's norm, metrics
within 1e-5 relative or 1e-6 absolute: a hundredfold above that rounding, far below what
a change of the math moves (a 1 % larger learning rate in ``ppo_cartpole`` fails on the
first leaf). Checked: with ``XLA_FLAGS=--xla_cpu_max_isa=SSE4_2`` every checksum changes and
every case still passes. Same-machine bitwise determinism is tested where it belongs
(tests/training/test_on_policy.py, test_checkpoint.py).
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
from flax import serialization

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

#: name -> (params_fingerprint, final_return, final_episode_length, last metrics row without its
#: timings (wall_s, sps)).
PINNED: dict[str, tuple] = {
    "ppo_cartpole": (
        (
            (0.0022604156859791415, 0.0003812276407971574),
            (2.827970590796371, -0.10858622984399877),
            (0.0010904287388250739, 0.0009873181948390377),
            (0.014439409922509598, -0.004150177870924884),
            (0.0021241444628685713, 0.0021241444628685713),
            (1.0010957078460487, 0.193437265120808),
            (0.008496769125735113, 0.0029264262630915106),
            (2.8296117247320667, 0.028930519685178943),
        ),
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
        (
            (260.0000915527344, 260.0000915527344),
            (0.730438965167042, -0.38045396696205114),
            (7.774418085236737, 0.8696851121889289),
            (256.0000915527344, 256.0000915527344),
            (77.66419219970703, -77.66419219970703),
            (2738.474853515625, 2738.474853515625),
            (0.004482492022770822, -0.0006318390982735056),
            (2.4492881974888925, 0.8123024224945206),
            (0.0015346830477938056, -0.0015346830477938056),
            (0.010135880636672083, 0.003102514879217818),
            (0.0010003159986808896, 0.0010003159986808896),
            (0.0020222917664796114, -0.0020222917664796114),
            (0.9988991056592207, -0.2918850542833335),
            (0.008160635361450015, 0.001771357110860983),
            (2.449281952544903, -0.2416278434475931),
        ),
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
        (
            (0.0007909192313082806, 0.000289756300914276),
            (2.8284314855570734, -0.07263014818845881),
            (0.0003677965039242023, -0.00017196294344678346),
            (2.828336737085823, 0.20143821640017423),
            (2.8284183378227743, -0.15219450610021598),
            (2.82843387286771, -0.1703145631931836),
            (0.00037870034367311605, -6.944816762972358e-05),
            (2.7357443920478737, 0.29306588243051906),
            (9.464479571135015e-05, 1.6737502734999757e-05),
            (2.8462801196887715, -0.26216043283691715),
            (0.000561666904763908, 8.373900154643244e-05),
            (2.991739774550057, -0.3022520496179328),
            (1.180932945317274e-05, 1.0692616183378727e-05),
            (0.014189516825474762, -0.006410477229720458),
            (0.0011198854772374034, 0.0011198854772374034),
            (1.0002685920632768, -0.10360342635616991),
            (0.004414440757752013, 0.001436233694707898),
            (2.829351478628634, 0.11415749856081886),
            (0.0028981846160144507, 6.094599351906673e-05),
            (2.8285312246937258, 0.3558152065394771),
            (2.828761574130181, -0.3801770383856684),
            (2.8280802746799236, 0.1924404752233066),
            (0.0029176998053035107, 4.694106667316937e-05),
            (2.8895652147564888, -0.026652806457835465),
            (0.0012354390350667308, -0.00015818581929632843),
            (2.739562612060088, -0.27904243796642286),
            (0.0015487227213165475, 0.0006828553943934244),
            (3.069533073501156, -0.08079735894929677),
        ),
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
        (
            (0.004740677245275044, 0.0006820216958421135),
            (2.8289658789959815, -0.09390145237805109),
            (0.002031507088252889, -0.0006614671167658784),
            (1.4137661327799635, -0.11834440243169445),
            (0.005255576412027567, 0.0008607742900261453),
            (3.9993589963688767, 0.8288389054521001),
        ),
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
        (
            (100.0000991821289, 100.0000991821289),
            (1.2224649150405411, -0.18459251062018311),
            (4.520919281963626, 0.5861368451681872),
            (0.0207451848015574, -0.0008476104689656113),
            (2.4501477638317835, -0.23887275285099718),
            (0.006060823332518339, 0.006060823332518339),
            (0.0163917571103265, -0.000890491951731757),
            (0.03499973874439702, -0.0011594125704863438),
            (2.841567748798785, 0.42736703805347176),
            (0.012128561735153198, -0.012128561735153198),
            (0.029926506728991182, 0.003311910748986132),
            (0.043824145398750694, 0.0004364476011410939),
            (2.84419874324745, -0.3750030481377378),
            (0.012128660455346107, -0.012128660455346107),
            (0.032084032587321655, -0.00039180493928339145),
            (0.015098373775931916, -0.0016478192817845367),
            (2.83262655742611, 0.4258020993192722),
            (0.0053292834199965, -0.0053292834199965),
            (0.015404155832277545, 0.0015905873820086828),
            (0.018382099800170852, -0.0006574261529171022),
            (2.83488347757742, -0.36893216580928556),
            (0.005329306703060865, -0.005329306703060865),
            (0.018701318206751676, 0.0016318757118039774),
        ),
        -65.0913314819336,
        10.0,
        {
            "chunk": 1,
            "env_steps": 96,
            "episodes": 4.0,
            "actor_grad_norm": 0.007391495164483786,
            "actor_loss": 0.01496425736695528,
            "actor_updates": 12.0,  # counts after the chunk's last update (were chunk means)
            "buffer_size": 88.0,
            "critic_grad_norm": 32.969993591308594,
            "critic_loss": 412.1606140136719,
            "critic_updates": 24.0,
            "episode_length": 10.0,
            "episode_return": -65.0913314819336,
            "q": -0.011060147546231747,
        },
    ),
    "ppo_population_2": (
        (
            (0.005012983605720843, 0.0002306576381558566),
            (4.000045894277255, -0.22086587319535805),
            (0.0028578542523170964, -0.00014164201005898878),
            (0.022253311074933304, -0.0030601265663226535),
            (0.0026096368453746273, 0.00014459529335038995),
            (1.4126475110155174, -0.5957262593418322),
            (0.010428815301694549, -0.002558350600396368),
            (3.999402411018198, -0.16305854516213297),
        ),
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
        (
            (0.0016939098590060674, 5.1287419827833155e-05),
            (2.8286855351217115, -0.4264469648148556),
            (0.0008198851547833593, 0.0007423571440745228),
            (0.014753800512897926, -0.0008370352718863128),
            (0.0006249053403735161, 0.0006249053403735161),
            (0.9995173535961808, 0.2994841820776631),
            (0.0024967666517559527, 0.0003589619336404816),
            (2.8283198068663937, -0.06190376037060179),
            (0.002533245729300617, 0.0011699195176355591),
            (2.8280585189205634, 0.6180814086642952),
            (0.001132007372630945, -0.0004785390586012214),
            (1.4141023233379293, 0.3147114505015347),
            (0.002795385465195848, 0.0006963068933972985),
            (3.9995230329819673, 0.8286691723426832),
        ),
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
REL = 1e-5  # of a metric, or of a parameter leaf's norm (see the module docstring)
ABS = 1e-6


def params_fingerprint(run_dir: str) -> tuple[tuple[float, float], ...]:
    """(norm, projection) per leaf of the run's ``params.msgpack``, leaves in sorted-path order.

    The projection is onto a unit vector drawn from a fixed numpy seed and the leaf's size, so
    it moves with any change of the leaf's values, not only of its norm. float64 on the host.
    """
    with open(os.path.join(run_dir, "params.msgpack"), "rb") as f:
        tree = serialization.msgpack_restore(f.read())
    flat: dict[str, np.ndarray] = {}

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for k in sorted(node):
                walk(node[k], f"{path}/{k}")
        else:
            flat[path] = np.asarray(node, np.float64).ravel()

    walk(tree, "")
    out = []
    for path in sorted(flat):
        x = flat[path]
        u = np.random.default_rng(x.size).standard_normal(x.size)
        out.append((float(np.linalg.norm(x)), float(x @ (u / np.linalg.norm(u)))))
    return tuple(out)


def run_case(name: str, run_dir: str) -> tuple:
    """Train case ``name`` through the host loop; its pinned tuple."""
    cfg = dataclasses.replace(CASES[name], progress=False, run_dir=run_dir)
    env, params = hordax.make(cfg.env.id, params=dict(cfg.env.params))
    summary = train_and_log(cfg, env, params, validate(cfg))
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        last = json.loads(f.readlines()[-1])
    row = {k: v for k, v in last.items() if k not in TIMINGS}
    return (
        params_fingerprint(run_dir),
        summary["final_return"],
        summary["final_episode_length"],
        row,
    )


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.slow
def test_pinned__params_and_final_metrics(name, tmp_path):
    got = run_case(name, str(tmp_path))
    want = PINNED[name]
    assert len(got[0]) == len(want[0]), f"{name}: {len(got[0])} leaves, pinned {len(want[0])}"
    for leaf, (g, w) in enumerate(zip(got[0], want[0], strict=True)):
        tol = REL * w[0] + ABS  # norm and projection within 1e-5 of the leaf's norm
        assert abs(g[0] - w[0]) <= tol and abs(g[1] - w[1]) <= tol, (
            f"{name}: params leaf {leaf} (norm, projection) {g} != pinned {w} (tolerance {tol:.3g})"
        )
    assert_close(got[1:], want[1:], name)


def assert_close(got, want, where: str) -> None:
    """Equal structure, equal strings, numbers within ``REL`` relative or ``ABS`` absolute."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{where}: keys differ"
        for k in want:
            assert_close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(want), f"{where}: length"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=REL, abs=ABS, nan_ok=True), where
    else:
        assert got == want, where


if __name__ == "__main__":  # print the current fingerprints, to re-pin after a change of math
    import tempfile

    for case in CASES:
        print(case, run_case(case, tempfile.mkdtemp())[0])
