"""PQL's parallel mode (actor, V-learner, P-learner on their own devices, host threads):
role placement, achieved update ratios, the CLI's JSON line, unsupported combinations
(its learning run: tests/training/test_trainer_learning.py). tests/conftest.py gives 8 host
devices."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from hordax.agents.pql import PQLConfig
from hordax.envs.registry import make
from hordax.training.config import ConfigError, PopulationConfig, TrainConfig, TrainerConfig
from hordax.training.host import sharding
from hordax.training.host.pql_parallel import ParallelPQL
from hordax.training.trainers import validate
from hordax.training.trainers.pql import PQLTrainer

pytestmark = pytest.mark.timeout(600)


def _trainer(acfg: PQLConfig, tcfg: TrainerConfig):
    resolved = validate(TrainConfig(agent=acfg, trainer=tcfg))
    env, params = make("Pendulum-v1")
    return PQLTrainer(tcfg, acfg, env, params, resolved), resolved


def _tiny_par(num_devices: int, k: int = 1, schedule: str = "async"):
    """beta_av=1.5, T=4: 6 critic updates per rollout; beta_pv=3: 2 actor updates;
    ``k`` groups / actor updates per learner call."""
    acfg = PQLConfig(
        mode="parallel", batch_size=16, buffer_size=128, beta_av=1.5, beta_pv=3,
        hidden_sizes=[16], normalize_obs=True, parallel_groups_per_call=k,
        parallel_schedule=schedule,
    )  # fmt: skip
    tcfg = TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=16 * 24, num_chunks=6)
    trainer, resolved = _trainer(acfg, tcfg)
    par = ParallelPQL(
        trainer, resolved.num_updates, resolved.chunk_updates, jax.devices()[:num_devices]
    )
    return par, resolved


@functools.cache
def _tiny_run(num_devices: int, k: int = 1, schedule: str = "async"):
    par, resolved = _tiny_par(num_devices, k, schedule)
    return par, resolved, par.run(jax.random.key(0))


def test_role_devices__assignment_by_device_count():
    d = jax.devices()
    assert len(d) >= 3
    assert sharding.pql_role_devices(d) == (d[0], d[1], d[2])
    assert sharding.pql_role_devices(d[:2]) == (d[0], d[1], d[1])
    assert sharding.pql_role_devices(d[:1]) == (d[0], d[0], d[0])


@pytest.mark.parametrize("num_devices,k", [(3, 1), (1, 1), (3, 2)])
@pytest.mark.slow
def test_parallel__roles_run_on_their_devices_and_counts_match_sync(num_devices, k):
    par, resolved, out = _tiny_run(num_devices, k)
    d = [str(x) for x in jax.devices()]
    want = (d[0], d[1], d[2]) if num_devices == 3 else (d[0],) * 3
    assert out.summary["role_devices"] == dict(
        zip(("actor", "v_learner", "p_learner"), want, strict=True)
    )
    # Where the arrays each role produced actually live.
    assert out.placed == {"actor": [want[0]], "v_learner": [want[1]], "p_learner": [want[2]]}
    # After the learners finish what the data is owed: the synchronous trainer's counts.
    n = resolved.num_updates
    assert out.summary["collection_steps"] == n * 4
    assert int(out.state.agent.critic_updates) == out.summary["critic_updates"] == n * 6
    assert int(out.state.agent.actor_updates) == out.summary["actor_updates"] == n * 2
    assert int(out.state.buffer.size) == 128  # 24 rollouts x 16 rows, wrapped
    assert out.summary["ratio_av"] == 1.5 and out.summary["ratio_pv"] == 3.0
    leaves = jax.tree.leaves(out.state.agent.params)
    assert all(bool(np.all(np.isfinite(x))) for x in leaves)


@pytest.mark.parametrize(
    "num_devices,k,schedule", [(3, 1, "async"), (1, 1, "async"), (3, 2, "async"), (3, 1, "serial")]
)
@pytest.mark.slow
def test_parallel__achieved_ratios_stay_within_the_waiting_window(num_devices, k, schedule):
    """Mid-run (at every chunk boundary) the counts obey the ratio control's bounds: the
    critic is at most one rollout of updates behind the data and never ahead of it; the
    actor updates are never ahead of the critic and at most two learner calls behind."""
    _, resolved, out = _tiny_run(num_devices, k, schedule)
    T, beta_av, beta_pv = 4, 1.5, 3
    assert len(out.rows) == resolved.num_chunks
    for row in out.rows:
        c, nc, na = row["collection_steps"], row["critic_updates"], row["actor_updates"]
        assert beta_av * (c - 2 * T) <= nc <= beta_av * c, row
        assert beta_pv * na <= nc <= beta_pv * (na + 2 * k), row
        assert na % k == 0 and nc % (beta_pv * k) == 0, row  # whole learner calls
        assert row["ratio_av"] == pytest.approx(nc / c)
        for role in ("actor", "v_learner", "p_learner"):
            assert row[f"busy_s/{role}"] > 0 and row[f"wait_s/{role}"] >= 0
    # The last chunk boundary: within a rollout's worth of the targets.
    last = out.rows[-1]
    assert abs(last["ratio_av"] - beta_av) <= beta_av * 2 * T / last["collection_steps"]
    assert abs(last["ratio_pv"] - beta_pv) <= 2 * k * beta_pv / max(last["actor_updates"], 1)


@pytest.mark.slow
def test_parallel__serial_schedule_is_reproducible_and_drains_before_each_rollout():
    """``agent.parallel_schedule=serial``: two runs from one key end with bitwise equal
    parameters and buffers and the same rows (not so for async, whose interleaving depends
    on timing); the learners do every update a rollout's data is owed before the actor
    collects the next one, so at each chunk boundary (the row is made right after a
    rollout) the critic is exactly one rollout behind; another key gives other parameters."""
    _, _, out = _tiny_run(3, 1, "serial")
    par, _ = _tiny_par(3, 1, "serial")
    again = par.run(jax.random.key(0))
    other = par.run(jax.random.key(1))

    def arrays(state):  # typed PRNG keys as their raw data
        return [
            jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x
            for x in jax.tree.leaves(state)
        ]

    for a, b in zip(arrays(out.state), arrays(again.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    keys = ("collection_steps", "critic_updates", "actor_updates", "episode_return")
    assert [[r[k] for k in keys] for r in out.rows] == [[r[k] for k in keys] for r in again.rows]
    for row in out.rows:
        c, nc, na = row["collection_steps"], row["critic_updates"], row["actor_updates"]
        assert nc == 1.5 * (c - 4) and nc == 3 * na, row
    a, b = out.state.agent.params["actor"], other.state.agent.params["actor"]
    pairs = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    assert not all(np.array_equal(x, y) for x, y in pairs)


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"mode": "async"}, "agent.mode='async': allowed values are ['sync', 'parallel']"),
        (
            {"schedule": "lockstep"},
            "agent.parallel_schedule='lockstep': allowed values are ['async', 'serial']",
        ),
        ({"population": 2}, "population.size=2: agent.mode=parallel does not support populations"),
        ({"checkpoint": 1}, "checkpoint.every=1: agent.mode=parallel does not support checkpoint"),
        ({"resume": "runs/x"}, "resume=runs/x: agent.mode=parallel does not support resume"),
        ({"beta_pv": 0}, "agent.beta_pv=0: must be an integer >= 1"),
        ({"groups": 3}, "agent.parallel_groups_per_call=3: must be an integer >= 1 dividing"),
    ],
)
def test_parallel__unsupported_or_bad_config_names_the_key(overrides, message):
    from hordax.training.config import CheckpointConfig

    acfg = PQLConfig(
        mode=overrides.get("mode", "parallel"),
        batch_size=16,
        buffer_size=64,
        beta_pv=overrides.get("beta_pv", 2),
        parallel_groups_per_call=overrides.get("groups", 1),
        parallel_schedule=overrides.get("schedule", "async"),
    )
    cfg = TrainConfig(
        agent=acfg,
        trainer=TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=64),
        population=PopulationConfig(size=overrides.get("population", 1)),
        checkpoint=CheckpointConfig(every=overrides.get("checkpoint", 0)),
        resume=overrides.get("resume", ""),
    )
    with pytest.raises(ConfigError) as e:
        validate(cfg)
    assert message in str(e.value)


@pytest.mark.slow
def test_cli__parallel_json_line_and_files(tmp_path):
    """`hordax train agent=pql agent.mode=parallel`: the JSON line reports the achieved
    ratios, busy times and role devices; metrics.jsonl has one row per chunk."""
    env = {**os.environ}
    env.pop("XLA_FLAGS", None)  # the CLI asks for one device per core itself
    proc = subprocess.run(
        [
            sys.executable, "-m", "hordax.training.cli", "train", "progress=false",
            "env=Pendulum-v1", "agent=pql", "agent.mode=parallel", "agent.hidden_sizes=[16]",
            "trainer.total_env_steps=1024", "trainer.num_chunks=2",
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    assert s["agent"] == "pql" and s["mode"] == "parallel" and s["env_steps"] == 1024
    p = s["parallel"]
    # tuned Pendulum config: 32 envs x 4 steps, beta_av 8, beta_pv 2 -> 8 rollouts.
    assert p["collection_steps"] == 32 and p["critic_updates"] == 256
    assert p["actor_updates"] == 128 and p["ratio_av"] == 8.0 and p["ratio_pv"] == 2.0
    assert set(p["busy_s"]) == set(p["role_devices"]) == {"actor", "v_learner", "p_learner"}
    rows = (tmp_path / s["run_dir"] / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(r)["chunk"] for r in rows] == [0, 1]
    assert os.path.isfile(os.path.join(s["run_dir"], "params.msgpack"))


def _tiny_cfg() -> tuple[TrainConfig, object, object]:
    acfg = PQLConfig(
        mode="parallel", batch_size=16, buffer_size=64, beta_av=1.0, beta_pv=2, hidden_sizes=[8]
    )
    tcfg = TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=64, num_chunks=2)
    cfg = TrainConfig(agent=acfg, trainer=tcfg, progress=False)
    env, params = make("Pendulum-v1")
    return cfg, env, params


@pytest.mark.slow
def test_parallel__nan_guard_and_role_errors_stop_the_run(monkeypatch):
    """A non-finite critic loss stops the run with NonFiniteError naming it; an exception
    inside a role thread reaches the caller; neither leaves the run hanging."""
    from hordax.agents.pql.agent import PQLAgent
    from hordax.training.core.report import NonFiniteError
    from hordax.training.host import pql_parallel
    from hordax.training.host.loop import train_and_log

    cfg, env, params = _tiny_cfg()
    resolved = validate(cfg)
    critic_loss = PQLAgent.critic_loss

    def nan_loss(self, *args):
        loss, q = critic_loss(self, *args)
        return loss * np.float32("nan"), q

    with monkeypatch.context() as m:
        m.setattr(PQLAgent, "critic_loss", nan_loss)
        with pytest.raises(NonFiniteError, match="non-finite critic_loss"):
            train_and_log(cfg, env, params, resolved)

    calls = {"n": 0}
    original = pql_parallel.ParallelPQL._busy

    def busy(self, sh, role, fn, *args):  # fail the V-learner's third call
        if role == "v_learner":
            calls["n"] += 1
            if calls["n"] == 3:
                raise RuntimeError("V-learner broke")
        return original(self, sh, role, fn, *args)

    monkeypatch.setattr(pql_parallel.ParallelPQL, "_busy", busy)
    with pytest.raises(RuntimeError, match="V-learner broke"):
        train_and_log(cfg, env, params, resolved)


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_parallel__float_ratio_products_do_not_stall_the_learners():
    """beta_av=1.4, T=10: 14 critic updates per rollout, 126 after 9 rollouts, while the
    float product 1.4 * 90 is 125.99999999999999. Ratio targets compared in floats would
    leave the last V-learner call waiting forever; the run must finish with the
    synchronous counts."""
    acfg = PQLConfig(
        mode="parallel", batch_size=8, buffer_size=64, beta_av=1.4, beta_pv=2,
        hidden_sizes=[8], normalize_obs=False,
    )  # fmt: skip
    tcfg = TrainerConfig(num_envs=1, rollout_length=10, total_env_steps=90, num_chunks=1)
    trainer, resolved = _trainer(acfg, tcfg)
    assert resolved.num_updates == 9 and 1.4 * 90 < 126
    par = ParallelPQL(trainer, resolved.num_updates, resolved.chunk_updates, jax.devices()[:3])
    out = par.run(jax.random.key(0))
    assert out.summary["critic_updates"] == 126 and out.summary["actor_updates"] == 63


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_parallel__buffer_holds_whole_n_step_windows_of_the_joined_rollouts(monkeypatch):
    """With every rollout in warmup (uniform actions, independent of the learners), the
    actor's trajectory is fixed by its key, so the V-learner's buffer is known exactly: one
    row per step of the 5 joined rollouts except the last n - 1 (still pending), each with
    the n-step return, discount and bootstrap observation of a step-by-step walk over the
    whole trajectory (T=4, n=3, episodes of 7 steps: truncations at rollout steps 2 and 1,
    inside windows that cross a rollout's end). The P-learner's buffer holds the same
    observations."""
    from test_off_policy import n_step_reference

    from hordax.training.core.normalization import NormalizedPolicy
    from hordax.training.core.rollout import rollout

    T, B, R, n, g, scale = 4, 2, 5, 3, 0.9, 0.5
    acfg = PQLConfig(
        mode="parallel", batch_size=8, buffer_size=64, beta_av=1.0, beta_pv=2, n_step=n,
        gamma=g, reward_scale=scale, hidden_sizes=[8], normalize_obs=False, warmup_updates=R,
    )  # fmt: skip
    tcfg = TrainerConfig(num_envs=B, rollout_length=T, total_env_steps=R * T * B, num_chunks=1)
    resolved = validate(TrainConfig(agent=acfg, trainer=tcfg))
    env, params = make("Pendulum-v1")
    params = params.replace(max_steps_in_episode=7)
    trainer = PQLTrainer(tcfg, acfg, env, params, resolved)
    key = jax.random.key(3)
    inserted = {}  # role -> its buffer after its newest insert
    busy = ParallelPQL._busy

    def record(self, sh, role, fn, *args):
        out = busy(self, sh, role, fn, *args)
        if fn is self._insert:
            inserted[role] = out
        return out

    monkeypatch.setattr(ParallelPQL, "_busy", record)
    out = ParallelPQL(trainer, R, R, jax.devices()[:3]).run(key)
    # The actor's trajectory, replayed on the host: its key chain, uniform actions.
    s0 = jax.jit(trainer.init)(key)
    env_state, obs, k = s0.env_state, s0.obs, s0.key
    parts = []
    for _ in range(R):
        k, k_r = jax.random.split(k)
        env_state, obs, tr = rollout(
            trainer.env, trainer.env_params, NormalizedPolicy(trainer.agent, None), s0.agent,
            env_state, obs, k_r, T,
        )  # fmt: skip
        parts.append(tr)
    tr = jax.tree.map(lambda *x: np.concatenate(x), *parts)  # [R * T, B, ...]
    assert tr.truncated.any(axis=1).nonzero()[0].tolist() == [6, 13]
    G, D, last = n_step_reference(tr.reward * scale, tr.terminated, tr.truncated, g, n)
    rows = (R * T - (n - 1)) * B  # the last n - 1 steps' windows are not complete yet
    buf = jax.device_get(out.state.buffer)
    assert int(buf.size) == int(buf.ptr) == rows
    p_buf = jax.device_get(inserted["p_learner"])
    assert int(p_buf.size) == int(p_buf.ptr) == rows
    np.testing.assert_array_equal(p_buf.data, buf.data.obs)
    # Match each buffer row to its (step, env) by its (random, distinct) action.
    actions = tr.extras["unit_action"][..., 0]
    found = {}
    for i in range(rows):
        (t,), (b,) = np.nonzero(actions == buf.data.action[i, 0])
        assert (t, b) not in found
        found[t, b] = i
    assert sorted(found) == [(t, b) for t in range(R * T - (n - 1)) for b in range(B)]
    for (t, b), i in found.items():
        np.testing.assert_array_equal(buf.data.obs[i], tr.obs[t, b])
        np.testing.assert_allclose(buf.data.reward[i], G[t, b], rtol=1e-5, err_msg=(t, b))
        np.testing.assert_allclose(buf.data.discount[i], D[t, b], rtol=1e-6, err_msg=(t, b))
        np.testing.assert_array_equal(buf.data.next_obs[i], tr.next_obs[last[t, b], b])
