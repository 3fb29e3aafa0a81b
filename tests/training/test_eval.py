"""Evaluation of saved agents (``hordax eval``, the train-time ``eval`` block).

- a hand-made env with known episode returns: the runner's returns, lengths and metrics are
  exactly the known ones (each episode counted once, ended envs frozen: no second episode),
  and the mean and interval are the Student-t formula's;
- the evaluation seed space is disjoint from training's;
- multi-agent returns: an agent's reward counts on the steps it acted while active (its
  arrival step included; closed-form returns of still point masses, some of which finish
  at once), and the episode's and each team's returns are the masked means;
- a trained CartPole run (PQN, the CLI) evaluates above its threshold, the same JSON twice;
- bad input: one line naming the key, exit 2.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_driver import run_main
from flax import struct
from gymnax.environments.spaces import Box, Discrete
from scipy import stats

from hordax.envs.core import Environment, EnvParams, EnvState
from hordax.training.evaluation.episodes import (
    EVAL_TAG,
    Policy,
    episode_keys,
    eval_root,
    interval,
    make_runner,
)


@struct.dataclass
class CountState(EnvState):
    length: jax.Array  # i32[]: this episode terminates after `length` steps


@struct.dataclass
class CountParams(EnvParams):
    max_steps_in_episode: int = 100


class Countdown(Environment):
    """Episode length ``L in [1, 6]`` drawn at reset; step ``t`` (1-based) pays ``t``;
    terminates at ``t = L`` (return ``L (L + 1) / 2``) unless truncated first."""

    @property
    def default_params(self):
        return CountParams()

    def reset_env(self, key, params):
        length = jax.random.randint(key, (), 1, 7)
        return jnp.zeros(1, jnp.float32), CountState(time=jnp.int32(0), length=length)

    def step_env(self, key, state, action, params):
        t = state.time + 1
        state = state.replace(time=t)
        info = {
            "metrics": {"even": (state.length % 2 == 0).astype(jnp.float32)},
            "reward_terms": {},
        }
        obs = jnp.full(1, t, jnp.float32)
        return obs, state, t.astype(jnp.float32), t >= state.length, info

    def observation_space(self, params):
        return Box(0.0, 100.0, (1,), jnp.float32)

    def action_space(self, params):
        return Discrete(2)


def _constant_policy() -> Policy:
    p = Policy()
    p.initial_carry = lambda n: ()
    p.act = lambda params, st, carry, obs, first, key: (jnp.zeros(obs.shape[0], jnp.int32), carry)
    return p


def _known_lengths(env, params, keys):
    """Each episode's drawn length, from the reset key the runner uses."""
    reset_keys = jax.vmap(jax.random.split)(keys)[:, 0]
    return np.asarray(jax.vmap(lambda k: env.reset(k, params)[1].length)(reset_keys))


@pytest.mark.parametrize("limit", [100, 3])
def test_runner__known_returns_each_episode_once(limit):
    env, params = Countdown(), CountParams(max_steps_in_episode=limit)
    keys = episode_keys(7, 64)
    out = jax.device_get(make_runner(env, params, _constant_policy(), 200)(None, None, keys))
    L = _known_lengths(env, params, keys)
    steps = np.minimum(L, limit)
    assert np.all(out["done"])
    np.testing.assert_array_equal(out["length"], steps)  # no second episode after the first
    np.testing.assert_array_equal(out["return"], steps * (steps + 1) / 2)
    np.testing.assert_array_equal(out["terminated"], limit >= L)
    np.testing.assert_array_equal(out["metrics"]["even"], (L % 2 == 0).astype(np.float32))
    assert len(set(L.tolist())) > 3  # fresh draws: episodes differ


def test_interval__is_the_student_t_interval():
    x = np.array([1.0, 3.0, 6.0, 10.0, 15.0, 21.0])
    got = interval(x)
    half = stats.t.ppf(0.975, 5) * np.std(x, ddof=1) / math.sqrt(6)
    assert got["mean"] == pytest.approx(56 / 6)
    np.testing.assert_allclose(got["ci95"], [56 / 6 - half, 56 / 6 + half], rtol=1e-12)
    assert interval([2.0]) == {"mean": 2.0, "ci95": None, "std": None}


def test_eval_seeds__disjoint_from_training_seeds():
    """Evaluation roots carry the tag bit that no training root (``key(seed)``, seed <
    2**63) has; the keys they derive differ from the training keys of the same seed."""
    for seed in (0, 1, 12345, 2**40 + 3, 2**63 - 1):
        data = np.asarray(jax.random.key_data(eval_root(seed)))
        assert (
            data[0] & EVAL_TAG
            and not np.asarray(jax.random.key_data(jax.random.key(seed)))[0] & EVAL_TAG
        )

    def data(keys):
        return {tuple(np.asarray(jax.random.key_data(k)).tolist()) for k in keys}

    # Training's keys of seed 0 two splits deep (the trainers split their root 2-3 ways).
    root = jax.random.key(0)
    train = data(jax.random.split(root, 64))
    for k in jax.random.split(root, 3):
        train |= data(jax.random.split(k, 64))
    assert not data(episode_keys(0, 64)) & train
    # Other evaluation seeds give other episodes.
    env, params = Countdown(), CountParams()
    lengths = [_known_lengths(env, params, episode_keys(s, 32)) for s in (0, 1)]
    assert not np.array_equal(*lengths)
    with pytest.raises(ValueError, match="seed=-1"):
        eval_root(-1)


# --- the CLI path ---------------------------------------------------------------------------

TRAIN = [
    "agent=pqn",
    "trainer.num_envs=32",
    "trainer.rollout_length=32",
    "trainer.total_env_steps=98304",
    "trainer.num_chunks=3",
    "agent.epsilon_decay=0.2",
    "eval.episodes=8",
    "progress=false",
]


def _cli(args, cwd, timeout=500):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)
    return subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("eval")
    proc = _cli(["train", *TRAIN, f"hydra.run.dir={cwd / 'run'}"], cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cwd, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_cli__trained_cartpole_evaluates_above_threshold_reproducibly(cartpole_run):
    cwd, summary = cartpole_run
    run = cwd / "run"
    block = summary["eval"]  # the train-time evaluation, also in the last metrics row
    assert block["episodes"] == 8 and block["deterministic"] is True
    last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["eval/return"] == block["return"]["mean"]
    before = {
        p: (run / p).read_bytes() for p in ("params.msgpack", "summary.json", "metrics.jsonl")
    }
    outs = []
    for _ in range(2):
        proc = _cli(["eval", str(run), "episodes=32"], cwd)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    a, b = ({k: v for k, v in o.items() if k not in ("wall_s", "compile_s")} for o in outs)
    assert a == b  # same seed, same JSON
    assert a["episodes"] == 32 and a["return"]["ci95"][0] >= 195.0, a["return"]
    written = json.loads((run / "eval.json").read_text())
    assert written["return"] == a["return"]
    assert {p: (run / p).read_bytes() for p in before} == before  # training files untouched
    # env_params: the same policy on another setting of its env (a 50-step time limit)
    proc = _cli(["eval", str(run), "episodes=8", "env_params.max_steps_in_episode=50"], cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    short = json.loads(proc.stdout.strip().splitlines()[-1])
    assert short["env_params"] == {"max_steps_in_episode": 50}
    assert short["return"]["mean"] == 50.0 and short["episode_length"]["mean"] == 50.0, short
    # other settings do not overwrite the 32-episode evaluation: they get eval.1.json
    assert short["out"] == str(run / "eval.1.json")
    assert json.loads((run / "eval.json").read_text())["return"] == a["return"]
    assert json.loads((run / "eval.1.json").read_text())["return"] == short["return"]


def test_default_out__other_settings_never_overwrite_an_evaluation(tmp_path):
    """``hordax eval`` without ``out=``: the same settings rewrite their file, other ones
    (fewer episodes for a video, env_params, another seed) take the next free name;
    ``find_eval`` (the suite's reuse) finds an evaluation by its settings among them."""
    from hordax.training.evaluation.run import default_out, find_eval

    row = {"episodes_per_member": 256, "seed": 0, "deterministic": True, "split": "test"}
    row |= {"env_params": None, "max_steps": 91}
    first = default_out(str(tmp_path), "test", row)
    assert first == str(tmp_path / "eval_test.json")
    (tmp_path / "eval_test.json").write_text(json.dumps(row))
    assert default_out(str(tmp_path), "test", dict(row)) == first  # a rerun: same file
    for n, (key, value) in enumerate(
        [("episodes_per_member", 4), ("env_params", {"goal_radius": 3.0}), ("seed", 7)], 1
    ):
        other = row | {key: value}
        path = default_out(str(tmp_path), "test", other)
        assert path == str(tmp_path / f"eval_test.{n}.json"), (key, path)
        (tmp_path / f"eval_test.{n}.json").write_text(json.dumps(other))
        assert default_out(str(tmp_path), "test", other) == path  # its rerun: its own file
    assert find_eval(str(tmp_path), "test", {"seed": 7})["seed"] == 7  # eval_test.3.json
    assert find_eval(str(tmp_path), "test", {"episodes_per_member": 4, "seed": 0}) is not None
    assert find_eval(str(tmp_path), "test", {"seed": 5}) is None
    assert default_out(str(tmp_path), "", row) == str(tmp_path / "eval.json")  # no split
    (tmp_path / "eval.json").write_text("{not json")
    assert default_out(str(tmp_path), "", row) == str(tmp_path / "eval.1.json")


@pytest.mark.timeout(60)
def test_run_eval__a_bad_env_params_field_is_named_as_given(tmp_path):
    """``hordax eval RUN env_params.gravty=1``: the error names ``env_params.gravty`` (it
    said ``params.gravty``, a key the eval command does not have); a range error too."""
    from omegaconf import OmegaConf

    from hordax.training.config import TrainConfig
    from hordax.training.evaluation.run import EvalConfig, run_eval

    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(TrainConfig)))
    (tmp_path / "params.msgpack").write_bytes(b"")
    with pytest.raises(ValueError, match=r"^env_params\.gravty: unknown field of CartPole-v1"):
        run_eval(EvalConfig(run_dir=str(tmp_path), env_params={"gravty": 1.0}))
    with pytest.raises(ValueError, match=r"^env_params\.max_steps_in_episode=0: must be"):
        run_eval(EvalConfig(run_dir=str(tmp_path), env_params={"max_steps_in_episode": 0}))


@pytest.mark.timeout(300)
def test_train_time_eval__an_evaluation_that_fails_loses_no_training(tmp_path, capsys):
    """An env without a time limit whose greedy policy never ends an episode: the evaluation
    after the last chunk stops at its step cap. It raised through the host loop before the
    last chunk's checkpoint, ``params.msgpack`` and ``summary.json`` were written (the
    trained run was lost to its evaluation); now the run ends whole, the summary's ``eval``
    block and one stderr line say why there is no evaluation."""
    from hordax.agents.ppo import PPOConfig
    from hordax.envs.debug.point_mass import PointMass
    from hordax.training.config import CheckpointConfig, TrainConfig, TrainerConfig
    from hordax.training.evaluation import train_hooks
    from hordax.training.host.loop import train_and_log
    from hordax.training.trainers import validate

    env = PointMass()
    params = env.default_params.replace(max_steps_in_episode=10**7)  # no time limit
    cfg = TrainConfig(
        trainer=TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64, num_chunks=2),
        agent=PPOConfig(num_minibatches=1, num_epochs=1),
        checkpoint=CheckpointConfig(every=1),
        run_dir=str(tmp_path / "run"),
        progress=False,
    )
    cfg.env.id = "Debug-PointMass-v0"
    cfg.env.params = {"max_steps_in_episode": 10**7}
    cfg.eval.episodes = 2
    resolved = validate(cfg)
    summary = train_and_log(cfg, env, params, resolved, train_hooks(cfg, env, params, resolved))
    run = tmp_path / "run"
    assert (run / "params.msgpack").is_file() and (run / "checkpoints" / "2").is_dir()
    assert json.loads((run / "summary.json").read_text())["eval"] == summary["eval"]
    err = summary["eval"]["error"]
    assert "episodes still running" in err and "hordax eval" in err, err
    warning = capsys.readouterr().err.strip().splitlines()
    assert warning == [f"hordax: warning: eval after chunk 1: {err}"], warning


@pytest.mark.timeout(120)
def test_train_hooks__a_stochastic_eval_of_a_greedy_agent_is_refused_up_front(tmp_path):
    """``hordax train agent=pqn eval.deterministic=false``: refused before training, one line
    naming ``eval.deterministic`` (it trained the whole run and then failed at its end)."""
    [res] = run_main(
        [
            [
                "train",
                "agent=pqn",
                "eval.deterministic=false",
                "progress=false",
                f"hydra.run.dir={tmp_path / 'run'}",
            ]
        ],  # fmt: skip
        tmp_path,
    )
    err = res["stderr"].strip()
    assert res["code"] == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("hordax: error: eval.deterministic=False: agent.name=pqn has no"), err
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
def test_run_eval__a_damaged_params_file_is_named(tmp_path):
    """A cut ``params.msgpack``: "hordax: error: Unpack failed: incomplete input" named no
    file; now the file and what is wrong (backtests read it through the same function)."""
    from omegaconf import OmegaConf

    from hordax.training.config import TrainConfig
    from hordax.training.evaluation.run import EvalConfig, run_eval

    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(TrainConfig)))
    (tmp_path / "params.msgpack").write_bytes(b"\x82\xa6params")  # a map cut after its key
    with pytest.raises(ValueError, match=r"params\.msgpack: not a readable params file"):
        run_eval(EvalConfig(run_dir=str(tmp_path), episodes=2))


@pytest.mark.timeout(60)
def test_run_eval__a_config_yaml_that_does_not_parse_is_named(tmp_path):
    """A damaged ``config.yaml`` gave a yaml ParserError traceback from ``hordax eval``."""
    from hordax.training.evaluation.run import EvalConfig, run_eval

    (tmp_path / "config.yaml").write_text("env: [unclosed\n")
    (tmp_path / "params.msgpack").write_bytes(b"")
    with pytest.raises(ValueError, match=r"config.yaml is not readable YAML \(while parsing"):
        run_eval(EvalConfig(run_dir=str(tmp_path), episodes=2))
    (tmp_path / "config.yaml").write_text("- 1\n")
    with pytest.raises(ValueError, match=r"config.yaml is not a hordax run config"):
        run_eval(EvalConfig(run_dir=str(tmp_path), episodes=2))


BAD_EVAL = [
    (["eval", "no/such/run"], "run_dir='no/such/run'"),
    (["eval", "RUN", "episodes=0"], "episodes=0"),
    (["eval", "RUN", "split=test"], "split='test'"),
    (["eval", "RUN", "deterministic=false"], "deterministic=false"),  # PQN: greedy only
    (["eval", "RUN", "out=params.msgpack"], "out='params.msgpack'"),
    (["eval", "RUN", "video=x.avi"], "video='x.avi'"),
    (["eval", "RUN", "video=x.gif"], "video='x.gif'"),  # gymnax CartPole: no render
    (["eval", "RUN", "env_params.no_such_field=1"], "env_params.no_such_field: unknown field"),
    (["eval", "OTHER"], "agent.name=ppo"),  # a run of another algorithm
    (["eval", "NET"], "agent.name=pqn's network"),  # params that do not fit the config
]


@pytest.fixture(scope="module")
def bad_eval_results(cartpole_run):
    """Every case of :data:`BAD_EVAL` through the real ``main`` in one fresh process
    (cli_driver): ``{args: {"code", "stderr"}}``."""
    cwd, _ = cartpole_run
    edits = {  # the PQN run's files under a config that says another algorithm / network
        "OTHER": ("name: pqn", "name: ppo"),
        "NET": ("    - 128\n    - 128\n", "    - 64\n    - 64\n"),
    }
    text = (cwd / "run" / "config.yaml").read_text()
    for name, (old, new) in edits.items():
        shutil.copytree(cwd / "run", cwd / name.lower())
        assert old in text
        (cwd / name.lower() / "config.yaml").write_text(text.replace(old, new))
    argvs = [
        [str(cwd / a.lower()) if a in ("RUN", *edits) else a for a in args] for args, _ in BAD_EVAL
    ]
    results = run_main(argvs, cwd, keep_xla_flags=False, timeout=500)
    return dict(zip([tuple(a) for a, _ in BAD_EVAL], results, strict=True))


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("args", "names"), BAD_EVAL)
@pytest.mark.slow
def test_cli__bad_input_is_one_line_naming_the_key(bad_eval_results, args, names):
    res = bad_eval_results[tuple(args)]
    err = res["stderr"].strip()
    assert res["code"] == 2 and len(err.splitlines()) == 1, err[-2000:]
    assert names in err, err


def _zero_policy(space) -> Policy:
    p = Policy()
    p.initial_carry = lambda n: ()
    dtype = jnp.int32 if not hasattr(space, "low") else jnp.float32
    shape = tuple(space.shape)
    p.act = lambda params, st, carry, obs, first, key: (
        jnp.zeros((obs.shape[0], *shape), dtype),
        carry,
    )
    return p


def still_masses_returns(env, params, keys, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``(return f32[N, n], length i32[N])`` of Debug-MultiPointMass episodes under the zero
    policy, in closed form: the masses never move, so agent ``i`` (reset distance ``d_i``)
    arrives on step 1 iff ``d_i < goal_radius`` (return ``success_bonus - distance_scale
    d_i``: its arrival step counts, and then it is masked) and otherwise is paid
    ``-distance_scale d_i`` on each of the episode's steps (1 when every agent arrived,
    else ``steps``, the truncation)."""
    reset = jax.vmap(lambda k: env.reset(jax.random.split(k)[0], params)[1])(keys)
    d = np.linalg.norm(np.asarray(reset.goal, np.float64) - np.asarray(reset.pos), axis=-1)
    arrive = d < params.goal_radius
    length = np.where(np.all(arrive, axis=1), 1, steps)
    scale = params.distance_scale
    ret = np.where(arrive, params.success_bonus - scale * d, -scale * d * length[:, None])
    return ret, length


@pytest.mark.timeout(300)
def test_runner__multi_agent_returns_are_masked_per_agent_and_per_team():
    """Multi-agent envs: an agent's reward counts on the steps it acted while active
    (``env.agent_mask`` of the state before the step, arrival step included): on
    Debug-MultiPointMass with still masses and a goal radius some reach at reset, those agents
    get the bonus on step 1 and nothing after while the others keep paying distance (the
    closed-form returns, and a step-by-step loop with the acting state's mask); the episode's
    return is the masked mean over agents, and each team's (MPE-SimpleTag's adversaries and
    agent) the mean over its agents."""
    from hordax.envs.registry import make
    from hordax.envs.wrappers import ClipAction
    from hordax.training.evaluation.episodes import _env_step, episode_stats, masked_mean

    steps = 20
    env, params = make(
        "Debug-MultiPointMass-v0", params={"max_steps_in_episode": steps, "goal_radius": 0.8}
    )
    policy = _zero_policy(env.action_space(params))
    keys = episode_keys(0, 3)
    out = jax.device_get(make_runner(env, params, policy, 50)(None, None, keys))
    assert out["return"].shape == (3, env.num_agents) and np.all(out["done"])
    want, length = still_masses_returns(env, params, keys, steps)
    np.testing.assert_array_equal(out["length"], length)
    np.testing.assert_allclose(out["return"], want, rtol=1e-5, atol=1e-4)
    assert np.all(out["active"])  # every agent acted while active (on step 1 at least)
    step = jax.jit(_env_step(ClipAction(env)))
    masked_while_running = 0
    for i in range(3):  # the reference: one episode at a time, by hand
        k_reset, k_loop = jax.random.split(keys[i])
        obs, state = env.reset(k_reset, params)
        total, active = np.zeros(env.num_agents), np.zeros(env.num_agents, bool)
        for _ in range(50):
            k_loop, k_step = jax.random.split(k_loop)
            mask = np.asarray(env.agent_mask(state, params))  # the state the agents act in
            masked_while_running += int(np.sum(~mask))
            act = jnp.zeros(env.action_space(params).shape, jnp.float32)
            obs, state, r, term, trunc, info = step(k_step, state, act, params)
            total += np.where(mask, np.asarray(r), 0.0)
            active |= mask
            if term or trunc:
                break
        np.testing.assert_allclose(out["return"][i], total, rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(out["active"][i], active)
    # Masking is exercised: some agent finished while others ran on.
    assert masked_while_running > 0
    st = episode_stats(out)
    np.testing.assert_allclose(st["return"]["mean"], want.mean(), rtol=1e-5)
    tag, tparams = make("MPE-SimpleTag-v0")
    tout = jax.device_get(
        make_runner(tag, tparams, _zero_policy(tag.action_space(tparams)), 50)(None, None, keys)
    )
    st = episode_stats(tout, tag.team_index, tag.team_names)
    assert set(st["team_return"]) == {"adversary", "agent"}
    ret, teams = np.asarray(tout["return"]), np.asarray(tag.team_index)
    assert np.all(tout["active"])  # MPE: every agent is active on every step
    np.testing.assert_allclose(masked_mean(ret, tout["active"]), ret.mean(axis=1), rtol=1e-6)
    for t, name in enumerate(tag.team_names):
        want_team = ret[:, teams == t].mean()
        np.testing.assert_allclose(st["team_return"][name]["mean"], want_team, rtol=1e-6)
    np.testing.assert_allclose(st["return"]["mean"], ret.mean(), rtol=1e-6)
