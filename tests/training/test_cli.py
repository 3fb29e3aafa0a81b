"""`hordax train`: one-line errors for bad input, the JSON summary line, run files, learning.

Error cases run in-process (hydra composes in ~0.1 s); the end-to-end runs use a
subprocess, as a user would.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_driver import run_main

from hordax.training.cli import main

SUMMARY_KEYS = {
    "env",
    "agent",
    "seed",
    "env_steps",
    "wall_s",
    "compile_s",
    "sps",
    "final_return",
    "params_checksum",
    "metrics",
}


PQL_N_STEP = "agent.n_step=9: must be <= trainer.rollout_length=4 (windows stay in one rollout)"

BAD_INPUT = [
    (["env=Nope-v0"], "env='Nope-v0' is not a registered environment"),
    (["env=CartPol-v1"], "did you mean CartPole-v1"),
    (
        ["agent=sac"],
        "agent=sac: allowed values are ['ensemble', 'ippo', 'mappo', 'ppo', 'pql', 'pqn']",
    ),
    (["logger=x"], "logger=x: allowed values are ['stdout', 'wandb']"),
    (["trainer.num_envs=0"], "trainer.num_envs=0: must be an integer >= 1"),
    (["trainer.reset_pool=-2"], "trainer.reset_pool=-2: must be -1 (auto), 0 (off: in-step"),
    (["agent.learning_rate=-0.1"], "agent.learning_rate=-0.1: must be a finite number > 0"),
    (["agent.gamma=2"], "agent.gamma=2.0: must be in [0, 1]"),
    (["agent.num_minibatches=3"], "agent.num_minibatches=3: must divide the batch"),
    (["trainer.total_env_steps=10"], "trainer.total_env_steps=10: must be >= one update"),
    (["trainer.num_envs=abc"], "trainer.num_envs=abc: Value 'abc' of type 'str' could not be"),
    (["trainer.num_envz=3"], "trainer.num_envz=3: unknown key 'trainer.num_envz'; allowed keys"),
    (["agent.network.torso=rnn"], "agent.network.torso='rnn': allowed values are 'mlp', 'cnn'"),
    (["env.params.gravty=1"], "env.params.gravty: unknown field of CartPole-v1 params"),
    # a boolean field takes true/false only (OmegaConf read 2, yes and on as True)
    (["progress=2"], "progress=2: must be true or false"),
    (["agent.normalize_obs=yes"], "agent.normalize_obs=yes: must be true or false"),
    (
        ["env=Aerial-Hover-v0", "env.kwargs.controler=velocity"],
        "env.kwargs.controler: neither an argument of the Aerial-Hover-v0 constructor",
    ),
    (["env=Debug-PointMass-v0", "env.params.dt=-1"], "env.params.dt=-1.0: must be finite and > 0"),
    # issue #18 items 2-3 and issue #13: env params typed from their defaults, gymnax ids
    # included, nested groups settable (these were tracebacks, silent runs, or unnamed keys)
    (["env.params.gravity=abc"], "env.params.gravity='abc': must be a finite number"),
    (["env=Debug-PointMass-v0", "env.params.dt=abc"], "env.params.dt='abc': must be a finite"),
    (["env.params.max_steps_in_episode=0"], "env.params.max_steps_in_episode=0: must be an"),
    (
        ["env=Debug-PointMass-v0", "env.params.max_steps_in_episode=2.5"],
        "env.params.max_steps_in_episode=2.5: must be an integer",
    ),
    (["env=Aerial-Hover-v0", "env.params.quad.mass=-1"], "env.params.quad.mass=-1.0: must be > 0"),
    (["env=Aerial-Hover-v0", "env.params.quad.mas=1"], "env.params.quad.mas: unknown field of"),
    (["seed=-1"], "seed=-1: must be an integer in [0, 2**63 - population.size]"),
    (["checkpoint.every=-1"], "checkpoint.every=-1: must be an integer >= 0 (0 = never)"),
    (["checkpoint.keep=0"], "checkpoint.keep=0: must be an integer >= 1"),
    (["population.size=0"], "population.size=0: must be an integer >= 1"),
    (
        ["population.size=2", "population.hparams.learning_rate=[1e-4]"],
        "population.hparams.learning_rate=[0.0001]: needs population.size=2 values, got 1",
    ),
    (
        ["population.size=2", "population.hparams.gamma=[0.9,0.99]"],
        "population.hparams.gamma: unknown; allowed names are ['learning_rate', 'ent_coef',",
    ),
    (
        ["population.size=4", "mesh=seed8"],
        "mesh.seed=8: must divide population.size=4",
    ),
    (["mesh.data=3"], "mesh.data=3: must divide trainer.num_envs=4"),
    (["resume=/no/such/run"], "resume=/no/such/run: no hordax run there"),
    (
        ["run_dir=runs/a", "hydra.run.dir=runs/b"],
        "run_dir=runs/a: conflicts with hydra.run.dir=runs/b (the run's directory: give one",
    ),
    (["trainer.num_envs"], "Error parsing override 'trainer.num_envs'"),
    # agent=pqn (moved here from tests/agents/test_pqn.py: one driver process for all)
    (["agent=pqn", "agent.q_lambda=1.5"], "agent.q_lambda=1.5: must be in [0, 1]"),
    (["agent=pqn", "agent.num_minibatches=3"], "agent.num_minibatches=3: must divide the batch"),
    (["agent=pqn", "agent.epsilon_decay=0"], "agent.epsilon_decay=0.0: must be in (0, 1]"),
    (["agent=pqn", "agent.clip_eps=0.2"], "unknown key 'agent.clip_eps'"),
    (
        ["agent=pqn", "population.size=2", "population.hparams.gamma=[0.9,0.99]"],
        "population.hparams.gamma: unknown; allowed names are ['learning_rate', 'q_lambda'",
    ),
    (
        ["agent=pqn", "population.size=2", "population.hparams.q_lambda=[0.5,1.5]"],
        "population.hparams.q_lambda=[0.5, 1.5]: member 1: agent.q_lambda=1.5: must be in [0, 1]",
    ),
    (["agent=pqn", "env=Pendulum-v1"], "agent=pqn needs a Discrete action space"),
    (
        ["agent=pqn", "env=Debug-MultiPointMass-v0"],
        "agent.name=pqn: the PQN trainer supports single-agent envs, and ",
    ),
    (
        ["agent=pql", "env=Debug-MultiPointMass-v0"],
        "agent.name=pql: the PQL trainer supports single-agent envs, and ",
    ),
    # agent=pql (moved here from tests/training/test_off_policy.py; exact text checked below)
    (["env=Pendulum-v1", "agent=pql", "agent.n_step=9"], PQL_N_STEP),
]


@pytest.fixture(scope="module")
def bad_input_results(tmp_path_factory):
    """Every bad-input case through the real ``main`` in one fresh process (cli_driver)."""
    cwd = tmp_path_factory.mktemp("cli_errors")
    results = run_main([["train", "progress=false", *args] for args, _ in BAD_INPUT], cwd)
    return cwd, dict(zip([tuple(a) for a, _ in BAD_INPUT], results, strict=True))


@pytest.mark.parametrize("args,expected", BAD_INPUT)
@pytest.mark.slow
def test_cli__bad_input_gives_one_line_error_and_nonzero_exit(bad_input_results, args, expected):
    """Exit code 2, a single 'hordax: error:' line naming key and value, no run dir left."""
    cwd, results = bad_input_results
    res = results[tuple(args)]
    err = res["stderr"].strip()
    assert res["code"] == 2, res
    assert err.startswith("hordax: error: ") and len(err.splitlines()) == 1, err
    assert expected in err
    assert not any((cwd / "runs").rglob("*.yaml")) if (cwd / "runs").exists() else True


@pytest.mark.slow
def test_cli__pql_bad_config_is_exactly_one_line(bad_input_results):
    """`hordax train env=Pendulum-v1 agent=pql agent.n_step=9`: exactly this error line."""
    _, results = bad_input_results
    res = results[("env=Pendulum-v1", "agent=pql", "agent.n_step=9")]
    assert res["code"] == 2
    assert res["stderr"].strip() == f"hordax: error: {PQL_N_STEP}"


@pytest.mark.timeout(120)
def test_cli__resume_of_a_finished_run_without_checkpoints_says_so(tmp_path):
    """``hordax train resume=DIR`` on a run that finished with checkpoint.every=0 (the
    default): one line saying there is nothing to continue and where its results are; it
    used to say the run "stopped before its first checkpoint" and offered a command that
    trains it again with overwrite=true, deleting the finished run."""
    run_dir = tmp_path / "done"
    run_dir.mkdir()
    (run_dir / "overrides.json").write_text('["trainer.total_env_steps=1024", "progress=false"]')
    (run_dir / "summary.json").write_text("{}")
    [res] = run_main([["train", f"resume={run_dir}"]], tmp_path)
    err = res["stderr"].strip()
    assert res["code"] == 2 and len(err.splitlines()) == 1, err
    assert "the run finished without checkpoints (checkpoint.every=0)" in err, err
    assert str(run_dir / "summary.json") in err and "overwrite=true" not in err, err
    assert not (run_dir / "checkpoints").exists()  # the failed resume left no empty folder


@pytest.mark.timeout(300)
def test_cli__a_file_system_error_is_one_line_not_a_traceback(tmp_path):
    """A run directory that cannot be made, a file the run cannot write (here a folder in the
    way of ``summary.json``'s temporary file; a full disk or a read-only one alike) and an
    evaluation ``out=`` that cannot be written: one line naming the path and the reason, and
    where the run stands; they were hydra's traceback (exit 1) after a whole run."""
    blocker = tmp_path / "afile"
    blocker.write_text("")
    run_dir = tmp_path / "run"
    (run_dir / "summary.json.tmp").mkdir(parents=True)
    tiny = ["env=Debug-PointMass-v0", "trainer.total_env_steps=1024", "trainer.num_chunks=2",
            "agent.network.hidden_sizes=[8]", "checkpoint.every=1", "eval.episodes=0",
            "progress=false"]  # fmt: skip
    made, failed, ev = run_main(
        [
            ["train", *tiny, f"hydra.run.dir={blocker / 'run'}"],
            ["train", *tiny, f"hydra.run.dir={run_dir}"],
            ["eval", str(run_dir), "episodes=2", f"out={blocker / 'eval.json'}"],
        ],
        tmp_path,
    )
    for res, code, path in ((made, 2, blocker / "run"), (failed, 1, run_dir / "summary.json.tmp"),
                            (ev, 2, blocker / "eval.json")):  # fmt: skip
        err = res["stderr"].strip()
        assert res["code"] == code and len(err.splitlines()) == 1, err
        assert err.startswith("hordax: error: ") and str(path) in err, err
    assert "Is a directory" in failed["stderr"], failed["stderr"]
    assert f"continue with: hordax train resume={run_dir}" in failed["stderr"]
    assert (run_dir / "params.msgpack").is_file() and (run_dir / "checkpoints" / "2").is_dir()


def test_cli__process_exit_code_and_help():
    """As a process: a bad value exits 2 with one stderr line; --help exits 0."""
    bad = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", "train", "trainer.num_envs=0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "hordax: error: trainer.num_envs=0: must be an integer >= 1"
    )
    assert bad.stdout == ""
    with pytest.raises(SystemExit) as exc:
        main(["trian"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


def _run_cli(args, cwd, timeout=400):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XLA_FLAGS", None)  # the CLI's own device setup, as a user would get it
    proc = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", "train", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(summary) >= SUMMARY_KEYS
    return summary, proc


@pytest.mark.slow
def test_cli__short_run_writes_run_dir_and_json_summary(tmp_path, monkeypatch):
    """The last stdout line is the JSON summary; the run dir has config, metrics, params;
    ``run_dir=DIR`` is where it writes (the CLI once replaced it silently with hydra's
    timestamped directory).

    The run also goes through ``distributed=true`` with one process: jax.distributed is
    initialized from the JAX_* variables before any JAX work."""
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "127.0.0.1:23457")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "1")
    monkeypatch.setenv("JAX_PROCESS_ID", "0")
    summary, proc = _run_cli(
        [
            "env=Debug-PointMass-v0",
            "trainer.total_env_steps=4096",
            "trainer.num_chunks=2",
            "logger=wandb",
            "seed=4",
            "distributed=true",
            f"run_dir={tmp_path / 'mine'}",
        ],
        tmp_path,
    )
    run_dir = Path(summary["run_dir"])
    assert run_dir == tmp_path / "mine"
    assert {"config.yaml", "metrics.jsonl", "params.msgpack", "summary.json"} <= {
        p.name for p in run_dir.iterdir()
    }
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["chunk"] for r in rows] == [0, 1] and rows[-1]["env_steps"] == summary["env_steps"]
    assert summary["seed"] == 4 and summary["env"] == "Debug-PointMass-v0"
    assert set(summary["metrics"]) == {"success", "distance"}  # from info["metrics"]
    assert any((run_dir / "wandb").glob("offline-run-*")), "wandb must log offline"
    assert "id: Debug-PointMass-v0" in (run_dir / "config.yaml").read_text()


@pytest.mark.slow
def test_cli__default_cartpole_reaches_475(tmp_path):
    """`hordax train env=CartPole-v1 agent=ppo` with its default config solves CartPole."""
    summary, _ = _run_cli(["env=CartPole-v1", "agent=ppo", "progress=false"], tmp_path)
    assert summary["final_return"] >= 475, summary


@pytest.mark.slow
def test_cli__default_pendulum_reaches_minus_250(tmp_path):
    """`hordax train env=Pendulum-v1` with its default (tuned) config reaches >= -250."""
    summary, _ = _run_cli(["env=Pendulum-v1", "progress=false"], tmp_path)
    assert summary["final_return"] >= -250, summary


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_cli__tuned_multihover_ippo_learns_the_crossing(tmp_path):
    """Issue #14's MultiHover by IPPO, small: the tuned config (yaw-frame observation, fine
    goal error, miss vectors, separation warning at 1 s within 1.25 m, staggered starts, lr
    5e-4) at 2M env steps instead of 4M, one seed, then 128 greedy fresh episodes.

    At 1M steps (this test until stop 49) the outcome hung on the host's float rounding:
    seed 0 reached 0.977 on an AVX-512 host and 0.359 on CI's and on an AVX2 AMD EPYC
    (CI failed), seeds 1-3 there 0.992 / 0.906 / 1.000, one run in four caught in the
    through-the-centre mode that section 29 describes. At 2M steps, AVX2 EPYC, seeds 0-3:
    all four within 0.1 m in 0.992 / 0.984 / 0.953 / 0.977 of 128 episodes, 0.2-2.2 % of the
    drones crashed, 114-163 s each with compile (an untrained policy: 0). The thresholds
    leave room for that mode. benchmarks/RESULTS.md sections 29 (full budget, 21 runs x 512
    episodes) and 39 (these runs)."""
    args = ["env=Aerial-MultiHover-v0", "agent=ippo", "progress=false", "eval.episodes=128"]
    args += ["trainer.total_env_steps=2000000", "trainer.num_chunks=2"]
    summary, _ = _run_cli(args, tmp_path, timeout=850)
    metrics = summary["eval"]["metrics"]
    assert metrics["all_success"]["mean"] >= 0.7, metrics
    assert metrics["crashed"]["mean"] <= 0.15, metrics


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"JAX_NUM_PROCESSES": "two"}, "JAX_NUM_PROCESSES='two': must be an integer"),
        ({"JAX_PROCESS_ID": "-1"}, "JAX_PROCESS_ID=-1: must be >= 0"),
    ],
)
def test_cli__distributed_bad_environment_is_named(environ, message, capsys):
    from hordax.training.cli import distributed_kwargs

    with pytest.raises(SystemExit) as exc:
        distributed_kwargs(environ)
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert distributed_kwargs(
        {"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "1"}
    ) == {"coordinator_address": "h:1", "num_processes": 2, "process_id": 1}


def test_cli__nested_env_params_reach_make():
    """`env.params.quad.mass=0.3 env.params.ctrl.max_tilt=0.5` (issue #13): the composed
    config holds nested groups that `make` sets field by field, keeping the others."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from hordax.envs.registry import make
    from hordax.training import cli

    cli._register_schemas()
    cfg_dir = cli.config_dir()
    args = ["env=Aerial-Hover-v0", "env.params.quad.mass=0.3", "env.params.ctrl.max_tilt=0.5"]
    with initialize_config_dir(str(cfg_dir), version_base=None):
        cfg = OmegaConf.to_object(
            compose("train", overrides=cli.rewrite_env_override(args, cfg_dir))
        )
    # The given nested groups arrive as given (other keys may come from the tuned config).
    assert cfg.env.params["quad"] == {"mass": 0.3}
    assert cfg.env.params["ctrl"] == {"max_tilt": 0.5}
    env, params = make(cfg.env.id, params=dict(cfg.env.params))
    assert float(params.quad.mass) == pytest.approx(0.3)
    assert float(params.ctrl.max_tilt) == pytest.approx(0.5)
    assert float(params.quad.gravity) == float(env.default_params.quad.gravity)


@pytest.mark.parametrize(
    ("args", "tuned"),
    [
        (["env=Debug-MultiPointMass-v0", "agent=ippo"], True),  # no configs/env/<id>.yaml
        (["env=Debug-MultiPointMass-v0", "agent=mappo"], False),  # no tuned file for mappo
        (["env=Pendulum-v1", "agent=ppo"], True),  # an id with its own env yaml
    ],
)
def test_cli__tuned_config_applies_with_or_without_an_env_yaml(args, tuned):
    """`hordax train env=<id> agent=<a>` applies tuned/<id>_<a>.yaml whether or not the id
    has configs/env/<id>.yaml (ids without one were run as env=_generic and their tuned file
    was skipped silently); without a tuned file the agent's defaults stay."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from hordax.training import cli

    cli._register_schemas()
    cfg_dir = cli.config_dir()
    env_id, agent = args[0][4:], args[1][6:]
    want = OmegaConf.load(cfg_dir / "tuned" / f"{env_id}_{agent}.yaml") if tuned else None
    with initialize_config_dir(str(cfg_dir), version_base=None):
        cfg = compose("train", overrides=cli.rewrite_env_override(args, cfg_dir))
        default = compose("train", overrides=[f"agent={agent}", "env=_generic"])
    assert cfg.env.id == env_id
    if tuned:
        for key, value in want.agent.items():
            if not OmegaConf.is_config(value):
                assert cfg.agent[key] == value, key
        for key, value in want.get("trainer", {}).items():
            assert cfg.trainer[key] == value, key
    else:
        assert cfg.agent == default.agent and cfg.trainer == default.trainer


def test_cli__tuned_config_may_set_train_yaml_keys(tmp_path):
    """A tuned file also sets train.yaml's own keys (eval.*, checkpoint.*): train.yaml's
    `_self_` comes before `tuned` in its defaults list (after it, train.yaml's values won)."""
    import shutil

    from hydra import compose, initialize_config_dir

    from hordax.training import cli

    cli._register_schemas()
    cfg_dir = tmp_path / "configs"
    shutil.copytree(cli.config_dir(), cfg_dir)
    (cfg_dir / "tuned" / "CartPole-v1_ppo.yaml").write_text(
        "# @package _global_\neval:\n  episodes: 5\ncheckpoint:\n  every: 3\n"
    )
    with initialize_config_dir(str(cfg_dir), version_base=None):
        cfg = compose("train", overrides=["env=CartPole-v1", "agent=ppo"])
        given = compose("train", overrides=["env=CartPole-v1", "eval.episodes=7"])
    assert cfg.eval.episodes == 5 and cfg.checkpoint.every == 3
    assert given.eval.episodes == 7  # the command line still wins
