"""PQL's synchronous trainer: n-step targets vs a Python loop, the replay buffer, mixed
exploration, the exact update schedule, bad configs (its learning runs:
tests/training/test_trainer_learning.py)."""

import functools
import json
import os
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.agents.pql import PQLConfig, exploration_stds
from hordax.envs.registry import make
from hordax.training.config import ConfigError, TrainConfig, TrainerConfig
from hordax.training.core import replay
from hordax.training.core.estimators import compute_n_step
from hordax.training.core.rollout import Transition
from hordax.training.trainers import validate
from hordax.training.trainers.pql import PQLTrainer, n_step_transitions, no_pending_steps


def n_step_reference(reward, terminated, truncated, gamma, n):
    """The n-step window of every (t, b), walked step by step."""
    T, B = reward.shape
    G, disc, last = np.zeros((T, B)), np.zeros((T, B)), np.zeros((T, B), int)
    for b in range(B):
        for t in range(T):
            g, k = 0.0, 0
            while True:
                g += gamma**k * reward[t + k, b]
                if terminated[t + k, b]:
                    G[t, b], disc[t, b], last[t, b] = g, 0.0, t + k
                    break
                if truncated[t + k, b] or k + 1 == n or t + k == T - 1:
                    G[t, b], disc[t, b], last[t, b] = g, gamma ** (k + 1), t + k
                    break
                k += 1
    return G, disc, last


@pytest.mark.parametrize("n,gamma", [(3, 0.99), (1, 0.9), (5, 0.95)])
def test_n_step__matches_python_loop_with_truncation_and_termination(n, gamma):
    rng = np.random.default_rng(0)
    T, B = 11, 4
    reward = rng.normal(size=(T, B)).astype(np.float32)
    terminated = rng.random((T, B)) < 0.1
    truncated = (rng.random((T, B)) < 0.1) & ~terminated
    terminated[:, 0], truncated[:, 0] = False, False
    terminated[4, 0], truncated[7, 0] = True, True  # both inside env 0's windows
    got = compute_n_step(jnp.asarray(reward), terminated, truncated, gamma, n)
    want = n_step_reference(reward, terminated, truncated, gamma, n)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)
    if n == 3:  # spot checks on env 0
        G, disc, last = (np.asarray(x)[:, 0] for x in got)
        assert disc[2] == 0.0 and last[2] == 4  # window 2..4 ends in the termination
        assert np.isclose(disc[6], gamma**2) and last[6] == 7  # truncation: bootstrap at 7
        assert np.isclose(disc[0], gamma**3) and last[0] == 2  # a full window


def _transitions(reward, terminated, truncated, next_obs) -> Transition:
    T, B = reward.shape
    return Transition(
        obs=next_obs - 1000.0,
        action=jnp.zeros((T, B, 1)),
        reward=jnp.asarray(reward, jnp.float32),
        terminated=jnp.asarray(terminated),
        truncated=jnp.asarray(truncated),
        next_obs=jnp.asarray(next_obs, jnp.float32),
        extras={"unit_action": jnp.zeros((T, B, 1))},
        info={},
    )


def test_n_step_transitions__bootstrap_from_final_observation():
    """The bootstrap observation is next_obs (final_observation) of the window's last step;
    at the first rollout the rows of its first T - (n - 1) steps are valid, the last n - 1
    steps wait for the next rollout."""
    T, B, n = 6, 2, 3
    next_obs = jnp.arange(T * B, dtype=jnp.float32).reshape(T, B, 1) + 100.0
    term = jnp.zeros((T, B), bool).at[1, 0].set(True)
    trunc = jnp.zeros((T, B), bool).at[3, 1].set(True)
    tr = _transitions(np.ones((T, B)), term, trunc, next_obs)
    pending = no_pending_steps(n, B, (1,), 1)
    rows, count, after = n_step_transitions(tr, pending, 0.5, n)
    valid = T - (n - 1)
    assert int(count) == valid * B and bool(after.valid)
    np.testing.assert_array_equal(after.next_obs, next_obs[valid:])
    boot = np.asarray(rows.next_obs)[: valid * B].reshape(valid, B)
    _, _, last = n_step_reference(np.ones((T, B)), np.asarray(term), np.asarray(trunc), 0.5, n)
    np.testing.assert_array_equal(boot, np.asarray(next_obs)[last[:valid], np.arange(B)[None], 0])
    assert boot[2, 1] == next_obs[3, 1, 0]  # truncated at step 3: its final observation
    np.testing.assert_allclose(
        np.asarray(rows.reward)[: valid * B].reshape(valid, B)[:, 1], [1.75] * 2 + [1.5, 1]
    )
    np.testing.assert_array_equal(np.asarray(rows.obs)[: valid * B], tr.obs[:valid].reshape(-1, 1))


def test_n_step_transitions__windows_run_across_rollouts():
    """T=4, n=3 (the tuned PQL setting): rows t=2 and t=3 of a rollout get whole 3-step
    returns from the next rollout's first steps (cutting windows at the rollout's end gave
    them 2- and 1-step returns), bootstrapped from final_observation at a truncation and not
    at all after a termination. Hand-computed, and equal to the step-by-step reference over
    the two rollouts joined."""
    T, B, n, g = 4, 2, 3, 0.5
    r = np.array([[1, 10], [2, 20], [3, 30], [4, 40], [5, 50], [6, 60], [7, 70], [8, 80]], float)
    term = np.zeros((2 * T, B), bool)
    trunc = np.zeros((2 * T, B), bool)
    trunc[4, 1] = True  # env 1: time limit at global step 4 (rollout 2, step 0)
    term[6, 1] = True  # env 1: termination at global step 6
    next_obs = np.arange(2 * T * B, dtype=np.float32).reshape(2 * T, B, 1) + 100.0
    first = _transitions(r[:T], term[:T], trunc[:T], next_obs[:T])
    second = _transitions(r[T:], term[T:], trunc[T:], next_obs[T:])
    _, _, pending = n_step_transitions(first, no_pending_steps(n, B, (1,), 1), g, n)
    rows, count, _ = n_step_transitions(second, pending, g, n)
    assert int(count) == T * B
    # Rows of global steps 4, 5 (this rollout's), then 2, 3 (the previous one's last two).
    steps = [4, 5, 2, 3]
    ret = np.asarray(rows.reward).reshape(T, B)
    disc = np.asarray(rows.discount).reshape(T, B)
    boot = np.asarray(rows.next_obs).reshape(T, B)
    # Hand-computed: env 0 has no episode end, so step 2 and 3 see 3 rewards each.
    hand_ret = {
        2: (3 + g * 4 + g * g * 5, 30 + g * 40 + g * g * 50),  # env 1: truncated at 4
        3: (4 + g * 5 + g * g * 6, 40 + g * 50),
        4: (5 + g * 6 + g * g * 7, 50),
        5: (6 + g * 7 + g * g * 8, 60 + g * 70),  # env 1: terminated at 6
    }
    hand_disc = {2: (g**3, g**3), 3: (g**3, g**2), 4: (g**3, g), 5: (g**3, 0.0)}
    hand_boot = {2: (4, 4), 3: (5, 4), 4: (6, 4), 5: (7, 6)}  # global step of the bootstrap
    for i, t in enumerate(steps):
        np.testing.assert_allclose(ret[i], hand_ret[t], rtol=1e-6, err_msg=f"step {t}")
        np.testing.assert_allclose(disc[i], hand_disc[t], rtol=1e-6, err_msg=f"step {t}")
        np.testing.assert_array_equal(boot[i], next_obs[hand_boot[t], [0, 1], 0])
    G, D, last = n_step_reference(r, term, trunc, g, n)  # windows inside the 8 joined steps
    np.testing.assert_allclose(ret, G[steps], rtol=1e-6)
    np.testing.assert_allclose(disc, D[steps], rtol=1e-6)
    np.testing.assert_array_equal(boot, next_obs[last[steps], np.arange(B)[None], 0])
    np.testing.assert_array_equal(np.asarray(rows.obs).reshape(T, B), next_obs[steps, :, 0] - 1000)


def test_replay__wraps_around_and_never_samples_stale_or_unwritten_rows():
    buf = replay.init_buffer({"id": jnp.int32(0)}, capacity=10)
    buf = replay.add(buf, {"id": jnp.arange(1, 5, dtype=jnp.int32)})  # ids 1..4
    assert int(buf.size) == 4 and int(buf.ptr) == 4
    ids = np.asarray(replay.sample(buf, jax.random.key(0), 2000)["id"])
    assert set(ids.tolist()) == {1, 2, 3, 4}  # never an unwritten (zero) slot
    for start in (5, 11):  # ids 5..10, then 11..16 wrap around
        buf = replay.add(buf, {"id": jnp.arange(start, start + 6, dtype=jnp.int32)})
    assert int(buf.size) == 10 and int(buf.ptr) == 6
    np.testing.assert_array_equal(np.asarray(buf.data["id"]), [11, 12, 13, 14, 15, 16, 7, 8, 9, 10])
    ids = np.asarray(replay.sample(buf, jax.random.key(1), 5000)["id"])
    assert set(ids.tolist()) == set(range(7, 17))  # exactly the newest 10 rows
    with pytest.raises(ValueError, match="capacity 10"):
        replay.add(buf, {"id": jnp.zeros(11, jnp.int32)})


@pytest.mark.slow
def test_mixed_exploration__stds_linear_over_env_index():
    np.testing.assert_allclose(exploration_stds(5, 0.05, 0.85), [0.05, 0.25, 0.45, 0.65, 0.85])
    trainer, _ = _tiny()
    state = trainer.init(jax.random.key(0)).agent.replace(update=jnp.int32(1))  # past warm-up
    obs = jnp.zeros((8, 3))
    keys = jax.random.split(jax.random.key(1), 4000)
    mean = trainer.agent.act_greedy(state, obs) / 2.0  # Pendulum bounds are +-2
    units = jax.vmap(lambda k: trainer.agent.act(state, obs, k)[1]["unit_action"])(keys)
    # Noise std per env (clipping to [-1, 1] shrinks the widest ones a little).
    std = np.asarray(jnp.std(units - mean[None], axis=0))[:, 0]
    want = np.linspace(0.05, 0.5, 8)
    np.testing.assert_allclose(std, want, rtol=0.08)


@functools.cache
def _tiny(beta_av=1.5, beta_pv=3, rollout_length=4, num_envs=4):
    acfg = PQLConfig(
        batch_size=16,
        buffer_size=64,
        beta_av=beta_av,
        beta_pv=beta_pv,
        sigma_max=0.5,
        hidden_sizes=[16],
    )
    tcfg = TrainerConfig(
        num_envs=num_envs, rollout_length=rollout_length, total_env_steps=5 * 16, num_chunks=1
    )
    resolved = validate(TrainConfig(agent=acfg, trainer=tcfg))
    env, params = make("Pendulum-v1")
    return PQLTrainer(tcfg, acfg, env, params, resolved), resolved


@pytest.mark.slow
def test_normalize_obs__buffer_holds_raw_env_observations():
    """With normalize_obs=true the buffer rows are the env's raw observations (obs and the
    bootstrap next_obs), and the statistics in the state are those of every observation
    the envs handed back (reset, then each step's, first observations after an auto-reset
    included), merged by the wrapper's RunningStats."""
    from hordax.envs.wrappers import RunningStats

    trainer, _ = _tiny()
    assert trainer.normalize_obs
    s0 = trainer.init(jax.random.key(0))
    s1, _ = jax.jit(trainer.update)(s0)
    # Replay the same rollout on the raw env (same keys, same actions).
    _, key_rollout, _ = jax.random.split(s0.key, 3)
    from hordax.training.core.normalization import NormalizedPolicy
    from hordax.training.core.rollout import rollout

    _, last_obs, tr = rollout(
        trainer.env, trainer.env_params, NormalizedPolicy(trainer.agent, s0.obs_stats),
        s0.agent, s0.env_state, s0.obs, key_rollout, trainer.cfg.rollout_length,
    )  # fmt: skip
    T, B = tr.reward.shape
    valid = T - 2  # n_step=3: the last 2 steps wait for the next rollout
    assert int(s1.buffer.size) == valid * B
    rows = jax.tree.map(lambda x: x[: valid * B], s1.buffer.data)
    np.testing.assert_array_equal(rows.obs, tr.obs[:valid].reshape(valid * B, 3))
    assert float(jnp.max(jnp.abs(rows.obs[:, :2]))) <= 1.0  # cos/sin: raw, not normalized
    assert float(jnp.max(jnp.abs(rows.obs[:, 2]))) <= 8.0  # raw angular velocity bound
    _, _, last = compute_n_step(tr.reward, tr.terminated, tr.truncated, 0.99, 3)
    boot = tr.next_obs[last[:valid], jnp.arange(B)[None, :]].reshape(valid * B, 3)
    np.testing.assert_array_equal(rows.next_obs, boot)
    seen = jnp.concatenate([tr.obs[1:], last_obs[None]]).reshape(T * B, 3)
    want = RunningStats.create((3,)).update(s0.obs).update(seen)
    np.testing.assert_allclose(s1.obs_stats.mean, want.mean, rtol=1e-6)
    np.testing.assert_allclose(s1.obs_stats.var, want.var, rtol=1e-6)
    assert float(s1.obs_stats.count) == pytest.approx(B + T * B, abs=1e-3)


@pytest.mark.slow
def test_normalize_obs__critic_and_actor_batches_use_current_stats(monkeypatch):
    """Every batch the critic and actor updates see is (raw - mean) / sqrt(var + eps) of
    buffer rows, with the statistics current at that update (after its rollout)."""
    trainer, _ = _tiny()
    state, _ = jax.jit(trainer.update)(trainer.init(jax.random.key(0)))  # past update 1
    seen = {"critic": [], "actor": []}
    agent = trainer.agent
    critic_update, actor_update = agent.critic_update, agent.actor_update

    def spy_critic(st, batch, key):
        jax.debug.callback(lambda o, n: seen["critic"].append((o, n)), batch.obs, batch.next_obs)
        return critic_update(st, batch, key)

    def spy_actor(st, obs):
        jax.debug.callback(lambda o: seen["actor"].append(o), obs)
        return actor_update(st, obs)

    monkeypatch.setattr(agent, "critic_update", spy_critic)
    monkeypatch.setattr(agent, "actor_update", spy_actor)
    new, _ = jax.jit(trainer.update)(state)
    jax.effects_barrier()
    assert len(seen["critic"]) == 6 and len(seen["actor"]) == 2
    stats = new.obs_stats  # the statistics of this update (merged before learning)
    assert float(jnp.max(jnp.abs(stats.mean - state.obs_stats.mean))) > 0  # they moved
    scale = np.sqrt(np.asarray(stats.var) + 1e-8)
    raw_obs = np.asarray(new.buffer.data.obs[: new.buffer.size])
    raw_next = np.asarray(new.buffer.data.next_obs[: new.buffer.size])

    def rows_of(z, raw):  # every normalized row is some raw buffer row, normalized
        x = z * scale + np.asarray(stats.mean)
        d = np.abs(x[:, None, :] - raw[None, :, :]).max(-1).min(-1)
        return d.max()

    for obs, nxt in seen["critic"]:
        assert rows_of(np.asarray(obs), raw_obs) < 1e-4
        assert rows_of(np.asarray(nxt), raw_next) < 1e-4
    for obs in seen["actor"]:
        assert rows_of(np.asarray(obs), raw_obs) < 1e-4
    # And the exact formula on one sampled batch.
    key = jax.random.key(7)
    raw = replay.sample(new.buffer, key, 16)
    got = trainer.critic_batch(new.buffer, stats, key)
    np.testing.assert_allclose(got.obs, (raw.obs - stats.mean) / scale, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        got.next_obs, (raw.next_obs - stats.mean) / scale, rtol=1e-5, atol=1e-6
    )
    # With stale statistics (those of the previous update) the batch would differ.
    stale = trainer.critic_batch(new.buffer, state.obs_stats, key)
    assert float(jnp.max(jnp.abs(stale.obs - got.obs))) > 1e-3


@pytest.mark.slow
def test_schedule__performs_exactly_the_configured_updates():
    """beta_av=1.5, T=4 -> 6 critic updates per trainer update; beta_pv=3 -> 2 actor."""
    trainer, resolved = _tiny()
    assert resolved.num_updates == 5
    state, m = jax.jit(trainer.train)(jax.random.key(0))
    assert int(state.agent.critic_updates) == 5 * 6
    assert int(state.agent.actor_updates) == 5 * 2
    np.testing.assert_array_equal(m["critic_updates"], [6, 12, 18, 24, 30])
    # n_step=3: the first rollout adds T - 2 = 2 steps x 4 envs (its last 2 steps wait for
    # the next rollout), every later one 16; then the buffer wraps.
    np.testing.assert_array_equal(m["buffer_size"], [8, 24, 40, 56, 64])
    assert int(state.buffer.ptr) == (8 + 4 * 16) % 64
    assert not any(bool(np.any(v)) for k, v in m.items() if k.startswith("nonfinite/"))
    # The critic moved, and its Polyak target trails it.
    p = state.agent.params
    diff = jax.tree.map(
        lambda a, b: float(jnp.max(jnp.abs(a - b))), p["critic"], p["critic_target"]
    )
    assert max(jax.tree.leaves(diff)) > 0


@pytest.mark.slow
def test_chunk_row__counts_are_those_at_the_chunk_end():
    """A chunk's metrics row reports the running counts (critic_updates, actor_updates,
    buffer_size) as they stand after its last update, as the parallel mode's rows do: the
    mean over the chunk's updates is no count the run ever had (6, 12, .. 30 -> 18)."""
    trainer, resolved = _tiny()
    state, m = jax.jit(trainer.train)(jax.random.key(0))
    row = trainer.chunk_row(jax.device_get(m))
    assert row["critic_updates"] == int(state.agent.critic_updates) == 30
    assert row["actor_updates"] == int(state.agent.actor_updates) == 10
    assert row["buffer_size"] == int(state.buffer.size) == 64
    assert row["critic_loss"] == pytest.approx(float(np.mean(m["critic_loss"])))  # still a mean


@pytest.mark.parametrize(
    "agent,trainer,message",
    [
        ({"beta_av": 0.0}, {}, "agent.beta_av=0.0: must be > 0"),
        ({"beta_pv": 0}, {}, "agent.beta_pv=0: must be an integer >= 1 (> 0)"),
        ({"beta_av": 0.3}, {}, "agent.beta_av=0.3: beta_av * trainer.rollout_length = 1.2"),
        ({"beta_av": 1.0, "beta_pv": 3}, {}, "agent.beta_pv=3: must divide the critic updates"),
        ({"batch_size": 128, "buffer_size": 64}, {}, "agent.batch_size=128: must be <= agent.buf"),
        ({"n_step": 5}, {}, "agent.n_step=5: must be <= trainer.rollout_length=4"),
        ({"buffer_size": 8}, {}, "agent.buffer_size=8: must hold one rollout"),
    ],
)
def test_validate__bad_pql_config_names_the_key(agent, trainer, message):
    acfg = PQLConfig(**{"batch_size": 16, "buffer_size": 64, **agent})
    tcfg = TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=64, **trainer)
    with pytest.raises(ConfigError) as e:
        validate(TrainConfig(agent=acfg, trainer=tcfg))
    assert message in str(e.value)


@pytest.mark.slow
def test_cli__pql_short_run_checkpoints_and_resumes(tmp_path):
    """A short `hordax train agent=pql` run prints the JSON line and checkpoints; resuming
    from its first checkpoint reproduces its parameters. (Its one-line bad-config error is
    checked in tests/training/test_cli.py, with the other CLI errors, in one process.)"""
    env = {**os.environ}
    env.pop("XLA_FLAGS", None)
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "hordax.training.cli", "train", "progress=false", *a],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    ok = run(
        "env=Pendulum-v1",
        "agent=pql",
        "trainer.total_env_steps=512",
        "trainer.num_chunks=2",
        "agent.hidden_sizes=[16]",
        "checkpoint.every=1",
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["agent"] == "pql" and summary["env_steps"] == 512
    ckpts = os.path.join(summary["run_dir"], "checkpoints")
    assert sorted(os.listdir(ckpts)) == ["1", "2", "meta.json"]
    # Resume from chunk 1 (replay buffer included in the checkpoint): bit-identical result.
    shutil.rmtree(os.path.join(ckpts, "2"))
    again = run(f"resume={summary['run_dir']}")
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads(again.stdout.strip().splitlines()[-1])
    assert resumed["resumed_from_chunk"] == 1
    assert resumed["params_checksum"] == summary["params_checksum"]


def projection_reference(probs, reward, discount, support):
    """C51's projection written with floor/ceil, one sample and one atom at a time."""
    B, K = probs.shape
    v_min, v_max = support[0], support[-1]
    dz = (v_max - v_min) / (K - 1)
    out = np.zeros((B, K))
    for b in range(B):
        for j in range(K):
            tz = min(max(reward[b] + discount[b] * support[j], v_min), v_max)
            pos = (tz - v_min) / dz
            lo, hi = int(np.floor(pos)), int(np.ceil(pos))
            if lo == hi:
                out[b, lo] += probs[b, j]
            else:
                out[b, lo] += probs[b, j] * (hi - pos)
                out[b, hi] += probs[b, j] * (pos - lo)
    return out


def test_distributional__projection_matches_c51_loop():
    from hordax.agents.pql import categorical_projection

    rng = np.random.default_rng(3)
    support = np.linspace(-10, 10, 51).astype(np.float32)
    probs = rng.dirichlet(np.ones(51), size=6).astype(np.float32)
    reward = np.array([0.0, 1.3, -25.0, 25.0, -0.37, 4.0], np.float32)  # incl. clipped
    discount = np.array([0.99**3, 0.9, 0.5, 1.0, 0.0, 0.97], np.float32)  # incl. terminal
    got = categorical_projection(probs, reward, discount, support)
    np.testing.assert_allclose(
        got, projection_reference(probs, reward, discount, support), atol=1e-5
    )
    np.testing.assert_allclose(np.asarray(got).sum(-1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_distributional__critic_and_actor_updates_run_and_learn_a_constant():
    """PQL-D: 51-atom critics fit a constant n-step target (reward 1, terminal) and the
    actor step runs; everything stays finite."""
    from hordax.agents.pql import CriticBatch, make_agent

    env, params = make("Pendulum-v1")
    cfg = PQLConfig(distributional=True, hidden_sizes=[32], critic_lr=3e-3, max_grad_norm=10.0)
    agent = make_agent(cfg, (3,), env.action_space(params))
    state = agent.init(jax.random.key(0))
    obs = jax.random.normal(jax.random.key(1), (64, 3))
    batch = CriticBatch(obs, jnp.zeros((64, 1)), jnp.ones(64), obs, jnp.zeros(64))

    @jax.jit
    def step(st, k):
        st, m = agent.critic_update(st, batch, k)
        st, am = agent.actor_update(st, obs)
        return st, (m["q"], am["actor_loss"])

    for k in jax.random.split(jax.random.key(2), 150):
        state, (q, actor_loss) = step(state, k)
    assert abs(float(q) - 1.0) < 0.1, float(q)  # expected value of critic 1 at the target
    assert np.isfinite(float(actor_loss)) and int(state.actor_updates) == 150


@pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 host devices (tests/conftest.py)")
@pytest.mark.slow
def test_normalize_obs__sharded_and_population_programs():
    """The CLI's programs (make_programs): the env batch split over 4 devices gives the
    1-device run's statistics and buffer (the stats are replicated, merged over all envs);
    a population of 2 carries one set of statistics per member."""
    from hordax.training.config import MeshConfig, PopulationConfig
    from hordax.training.host.programs import make_programs
    from hordax.training.trainers import make_trainer

    acfg = PQLConfig(batch_size=16, buffer_size=64, beta_av=1.0, hidden_sizes=[16])
    tcfg = TrainerConfig(num_envs=8, rollout_length=4, total_env_steps=64, num_chunks=1)
    env, params = make("Pendulum-v1")

    def run(mesh, size=1):
        cfg = TrainConfig(
            agent=acfg, trainer=tcfg, mesh=mesh, population=PopulationConfig(size=size)
        )
        resolved = validate(cfg)
        progs = make_programs(cfg, make_trainer(cfg, env, params, resolved))
        state, _ = progs.chunk(progs.init(*progs.init_args))
        return state, progs

    s1, _ = run(MeshConfig(seed=1, data=1))
    s4, p4 = run(MeshConfig(seed=1, data=4))
    assert p4.mesh.shape["data"] == 4
    np.testing.assert_allclose(s4.obs_stats.mean, s1.obs_stats.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s4.obs_stats.var, s1.obs_stats.var, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s4.buffer.data.obs, s1.buffer.data.obs, rtol=1e-5, atol=1e-5)
    assert s4.obs_stats.mean.sharding.is_fully_replicated
    sp, _ = run(MeshConfig(seed=2, data=1), size=2)
    assert sp.obs_stats.mean.shape == (2, 3) and float(sp.obs_stats.count[0]) > 8
    np.testing.assert_allclose(sp.obs_stats.mean[0], s1.obs_stats.mean, rtol=1e-5, atol=1e-6)
