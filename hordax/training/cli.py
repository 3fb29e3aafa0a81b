"""The ``hordax`` command (the only module that imports hydra).

    hordax train env=CartPole-v1 agent=ppo trainer.total_env_steps=500000 seed=3

Bad input gets one line on stderr naming the key, the value and what is allowed, and a
non-zero exit code (2 for hordax's own checks, 1 for hydra's composition errors and for a
file the run cannot write: a full or read-only disk, saying where the run stands). The
last line on stdout is one JSON object summarizing the run. A fresh run refuses a run
directory that already holds a run (exit 2) unless ``overwrite=true``; Ctrl-C stops a run
cleanly with one line saying how to resume it (exit 130).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from hordax import strict_json
from hordax.training.host.rundir import OVERRIDES_FILE  # no jax: cheap at start-up

# Everything that imports jax (all of hordax.training but host.sharding, hydra too) is
# imported inside the functions: main() must configure XLA's host devices
# (use_all_cpu_cores) before jax initializes, and `hordax --help` stays instant.

USAGE = """usage: hordax {train,eval,suite,bench,backtest} [hydra overrides ...]

  hordax train                                   PPO on CartPole-v1 (default config)
  hordax train env=Pendulum-v1                   any registered hordax or gymnax id
  hordax train agent.learning_rate=1e-3 seed=3   any config key (see hordax/configs/)
  hordax train logger=wandb                      Weights & Biases, offline by default
  hordax train --cfg job                         print the composed config
  hordax train checkpoint.every=5                checkpoint every 5 chunks
  hordax train resume=runs/CartPole-v1/ppo/DATE  continue a run from its newest checkpoint
  hordax train hydra.run.dir=D overwrite=true    replace the run in D (refused without it)
  hordax train population.size=8                 8 seeds in one vmapped program
  hordax train agent=ensemble env=StockTrading-v0   K PPO members + vote/average/rolling
  hordax train agent=ensemble env=CryptoTrading-v0 'ensemble.algorithms=[ppo,pqn]'   mixed
  hordax train eval.episodes=64 eval.every=5     fresh-episode evaluation (end, every 5 chunks)
  hordax train env=Aerial-Navigate-v0 curriculum=navigate   obstacle-density curriculum
  hordax eval RUN_DIR episodes=100 video=ep.gif  evaluate a saved agent on fresh episodes
  hordax suite                                   train + evaluate every headline task, 3 seeds
  hordax suite suite=tiny out_dir=D              the one-minute variant (results.md/csv, curves.png)
  hordax backtest RUN_DIR split=test             members, ensembles, baselines: table + PNG
  hordax bench env=CartPole-v1 num_envs=4096     random-action env steps/s (JSON line)
  hordax bench mode=train num_envs=1024          PPO training steps/s
  hordax bench -m env=CartPole-v1,Pendulum-v1 num_envs=256,4096,16384   CSV + PNG plot
"""


def config_dir() -> Path:
    """``$HORDAX_CONFIG_DIR``, else the configs that ship inside the package
    (``hordax/configs/``, package data: a wheel or a non-editable install carries them)."""
    env = os.environ.get("HORDAX_CONFIG_DIR")
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "configs"
    if not (path / "train.yaml").is_file():
        where = f"HORDAX_CONFIG_DIR={env}" if env else f"the package's config dir {path}"
        _fail(f"{where}: no train.yaml there (it must be a folder of hordax's hydra configs)")
    return path


def _register_schemas() -> None:
    """The typed schemas of every command's config: train's groups, one ``agent`` schema per
    registered algorithm (``<name>_schema``), bench's and backtest's."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import MISSING, OmegaConf

    from hordax.training.backtest import BacktestConfig
    from hordax.training.bench import BenchConfig
    from hordax.training.config import (
        EnvConfig,
        LoggerConfig,
        MeshConfig,
        TrainConfig,
        TrainerConfig,
    )
    from hordax.training.config.curriculum import CurriculumConfig
    from hordax.training.evaluation import EvalConfig
    from hordax.training.suite import SuiteConfig
    from hordax.training.trainers import ALGORITHMS

    cs = ConfigStore.instance()
    # ``agent`` is typed Any: its group's schema (one per algorithm) decides its type.
    train_node = OmegaConf.structured(TrainConfig)
    train_node.agent = MISSING
    cs.store(name="train_schema", node=train_node)
    cs.store(name="bench_schema", node=BenchConfig)
    cs.store(name="backtest_schema", node=BacktestConfig)
    cs.store(name="eval_schema", node=EvalConfig)
    cs.store(name="suite_schema", node=SuiteConfig)
    cs.store(group="curriculum", name="curriculum_schema", node=CurriculumConfig)
    cs.store(group="env", name="env_schema", node=EnvConfig)
    for name, alg in ALGORITHMS.items():
        cs.store(group="agent", name=f"{name}_schema", node=alg.config)
    cs.store(group="trainer", name="on_policy_schema", node=TrainerConfig)
    cs.store(group="logger", name="logger_schema", node=LoggerConfig)
    cs.store(group="mesh", name="mesh_schema", node=MeshConfig)


#: The train config's open dicts (keys not in the schema): their overrides, dotted
#: (``agent.team_ent_coef.speaker=0.001``) or whole (``agent.team_ent_coef={speaker: 0.001}``),
#: go in with ``++`` (add or override), as hydra refuses new keys in a typed config.
OPEN_DICTS = (
    "env.params.",
    "env.kwargs.",
    "population.hparams.",
    "ensemble.agents.",
    "agent.team_hidden_sizes.",
    "agent.team_ent_coef.",
)
_OPEN_DICT_KEYS = tuple(d[:-1] for d in OPEN_DICTS)


def rewrite_env_override(args: list[str], cfg_dir: Path) -> list[str]:
    """Make env overrides work for every registered id and every params field.

    - ``env=<id>`` without ``configs/env/<id>.yaml`` -> ``env=_generic env.id=<id>`` (and
      ``tuned=<id>_<agent>`` when that tuned file exists);
    - an override of one of :data:`OPEN_DICTS` (``env.params.<f>=v``, ``env.kwargs.<k>=v``,
      ``population.hparams.<h>=[...]``, ``agent.team_ent_coef.<team>=c``, ...) -> ``++...``
      (add or override: these dicts are open; their keys are checked later, by
      ``hordax.make``, the population's and the agent's validation).
    """
    agents = [a[6:] for a in args if a.startswith("agent=")]
    agent = agents[-1] if agents else "ppo"  # train.yaml's default agent
    out = []
    for arg in args:
        if arg.startswith("env=") and not (cfg_dir / "env" / f"{arg[4:]}.yaml").is_file():
            out += ["env=_generic", f"env.id={arg[4:]}"]
            # train.yaml's `optional tuned: ${env}_${agent}` now names _generic: pick the id's
            # tuned file (tuned/<id>_<agent>.yaml) explicitly, so no tuned config is skipped.
            if (cfg_dir / "tuned" / f"{arg[4:]}_{agent}.yaml").is_file():
                out.append(f"tuned={arg[4:]}_{agent}")
        elif arg.startswith(OPEN_DICTS) or arg.split("=", 1)[0] in _OPEN_DICT_KEYS:
            out.append(f"++{arg}")
        else:
            out.append(arg)
    return out


def run_dir_override(args: list[str]) -> list[str]:
    """``hordax train run_dir=DIR`` -> ``hydra.run.dir=DIR`` (the directory the run writes
    to is hydra's; ``run_dir`` is also the typed config's key, which the CLI fills with
    hydra's directory, so without this the value would be silently replaced). Given
    together with a different ``hydra.run.dir``, or a ``resume`` directory other than DIR,
    it is refused with one line naming both."""
    run_dir = _override(args, "run_dir")
    rest = [a for a in args if not a.lstrip("+").startswith("run_dir=")]
    if not run_dir:
        return rest
    for key in ("hydra.run.dir", "resume"):
        other = _override(args, key)
        if other and os.path.normpath(other) != os.path.normpath(run_dir):
            _fail(
                f"run_dir={run_dir}: conflicts with {key}={other} (the run's directory: "
                "give one of them)"
            )
    return [*rest, f"hydra.run.dir={run_dir}"]


def resume_overrides(args: list[str]) -> list[str]:
    """``resume=DIR`` -> the overrides that run was started with, then ``args``, and
    ``hydra.run.dir=DIR`` (the resumed run continues in its own directory; another
    ``hydra.run.dir`` in ``args`` is refused with one line naming both)."""
    resume = [a.split("=", 1)[1] for a in args if a.startswith("resume=")]
    if not resume or not resume[-1]:
        return args
    run_dir = resume[-1]
    other = _override(args, "hydra.run.dir")
    if other and os.path.normpath(other) != os.path.normpath(run_dir):
        _fail(
            f"resume={run_dir}: conflicts with hydra.run.dir={other} (a resumed run continues"
            " in its own directory: give one of them)"
        )
    from hordax.training.host.rundir import RunDirError, read_overrides

    try:
        stored = read_overrides(run_dir)
    except RunDirError as e:
        _fail(f"resume={run_dir}: {e}")
    before = [o for o in stored if not o.startswith(("resume=", "hydra.", "overwrite="))]
    return [*before, *args, f"hydra.run.dir={run_dir}"]


def restart_command(overrides: list[str], run_dir: str) -> str:
    """The command that starts the run in ``run_dir`` again from scratch."""
    import shlex

    kept = [o for o in overrides if not o.startswith(("resume=", "hydra.", "overwrite="))]
    return shlex.join(["hordax", "train", *kept, f"hydra.run.dir={run_dir}", "overwrite=true"])


def distributed_kwargs(environ: dict) -> dict:
    """``jax.distributed.initialize`` arguments from JAX_COORDINATOR_ADDRESS,
    JAX_NUM_PROCESSES and JAX_PROCESS_ID (those unset are left to JAX's own detection of
    SLURM, Open MPI, ...); a malformed value exits with a one-line error naming it."""
    kwargs: dict = {}
    if environ.get("JAX_COORDINATOR_ADDRESS"):
        kwargs["coordinator_address"] = environ["JAX_COORDINATOR_ADDRESS"]
    for var, key in (("JAX_NUM_PROCESSES", "num_processes"), ("JAX_PROCESS_ID", "process_id")):
        if environ.get(var):
            try:
                kwargs[key] = int(environ[var])
            except ValueError:
                _fail(f"{var}={environ[var]!r}: must be an integer")
            if kwargs[key] < (1 if key == "num_processes" else 0):
                _fail(f"{var}={environ[var]}: must be >= {1 if key == 'num_processes' else 0}")
    return kwargs


def _override(args: list[str], key: str) -> str | None:
    """The value of the last ``key=value`` override in ``args`` (None if absent)."""
    values = [a.split("=", 1)[1] for a in args if a.lstrip("+").startswith(f"{key}=")]
    return values[-1] if values else None


def _is_true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "yes", "1", "on")


def _wants_distributed(args: list[str]) -> bool:
    return _is_true(_override(args, "distributed"))


def check_run_dir_early(args: list[str]) -> None:
    """A fresh run with an explicit ``hydra.run.dir`` that holds a run stops here, before
    hydra writes its ``.hydra/`` files into that directory (the task checks again, for the
    default timestamped directory)."""
    from hordax.training.host.rundir import RunDirError, check_free, locked

    if any(a in ("--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help") for a in args):
        return  # hydra only prints something; no run starts
    run_dir = _override(args, "hydra.run.dir")
    problem = run_dir and unwritable_dir(run_dir)
    if problem:  # else hydra's traceback from its mkdir
        _fail(f"hydra.run.dir={run_dir}: cannot be made or written ({problem})")
    try:  # a run training there: refused before hydra rewrites its .hydra/ (the host loop
        with locked(run_dir, create=False, key="hydra.run.dir"):  # takes the lock itself)
            pass
    except RunDirError as e:
        _fail(str(e))
    if run_dir and not _override(args, "resume"):
        try:
            check_free(run_dir, _is_true(_override(args, "overwrite")))
        except RunDirError as e:
            _fail(str(e))


def unwritable_dir(path: str) -> str | None:
    """Why ``path`` cannot be made (or written, if it exists) as a directory, else None:
    its nearest existing ancestor (or itself) is not a directory, or not writable."""
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        p = os.path.dirname(p)
    if not os.path.isdir(p):
        return f"{p} is not a directory"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"{p} is not writable"
    return None


def os_error(e: OSError) -> str:
    """An OS error (disk full, read-only, a path in the way) as one line naming the path."""
    where = f": {e.filename}" if e.filename else ""
    return f"{e.strerror or e}{where}"


def _init_distributed() -> None:
    """``jax.distributed.initialize`` before anything touches XLA: it must run before the
    first JAX computation, and importing gymnax (hence hordax's agents) already computes."""
    import jax

    try:
        jax.distributed.initialize(**distributed_kwargs(os.environ))
    except (RuntimeError, ValueError) as e:
        _fail(f"distributed=true: jax.distributed.initialize() failed: {e}")


def _shared_run_dir(own: str) -> str:
    """Process 0's run directory, on every process of a multi-process run (their hydras may
    have named different timestamps; this process's own, left empty, is removed)."""
    from hordax.training.host.sharding import primary_str

    shared = primary_str(own)
    if shared != own and os.path.isdir(own):
        _remove_empty_run_dir(own)
    return shared


def _fail(message: str, code: int = 2, run_dir: str | None = None) -> None:
    if run_dir and os.path.isdir(run_dir):
        _remove_empty_run_dir(run_dir)
    print(f"hordax: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def env_error(e: Exception) -> str:
    """An error of ``hordax.make`` as the command line names its keys: every
    ``params.<field>`` in the env's message becomes ``env.params.<field>``, and a keyword
    that is neither a constructor argument nor a params field (only ``env.kwargs`` passes
    keywords) is ``env.kwargs.<keyword>``."""
    from hordax.envs.registry import UnknownArgumentError, renamed_params

    if isinstance(e, UnknownArgumentError):
        return f"env.kwargs.{e}"
    return renamed_params(str(e), "env.params.")


def _remove_empty_run_dir(run_dir: str) -> None:
    """A run that failed before training leaves no directory behind (only hydra's files)."""
    import shutil

    if not set(os.listdir(run_dir)) <= {".hydra", "config.yaml", OVERRIDES_FILE}:
        return
    shutil.rmtree(run_dir, ignore_errors=True)
    # Also the now-empty runs/<env>/<agent> folders, but never the working directory or
    # anything outside it.
    cwd = Path.cwd().resolve()
    parent = Path(run_dir).resolve().parent
    while parent != cwd and cwd in parent.parents:
        with contextlib.suppress(OSError):
            parent.rmdir()  # fails (and stops) if not empty
        if parent.exists():
            break
        parent = parent.parent


def _allowed_keys(cfg_dir: Path, dotted: str, config_name: str = "train") -> list[str]:
    """Keys of the node that holds ``dotted`` in the default composed config."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(cfg_dir), version_base=None):
        node = compose(config_name)
    for part in dotted.split(".")[:-1]:
        node = node.get(part) if hasattr(node, "get") else None
        if node is None:
            return []
    return sorted(node.keys()) if hasattr(node, "keys") else []


#: Hydra's command-line flags that take a value (``--cfg job``, ``-p agent``, ...).
_FLAGS_WITH_VALUE = (
    "--cfg", "-c", "--package", "-p", "--info", "-i", "--config-path", "-cp",
    "--config-name", "-cn", "--config-dir", "-cd", "--experimental-rerun",
)  # fmt: skip


def _strip_flags(args: list[str]) -> list[str]:
    """``args`` without hydra's flags and their values: the overrides alone."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a.startswith("-"):
            skip = a in _FLAGS_WITH_VALUE
        else:
            out.append(a)
    return out


def sweep_variants(args: list[str]) -> list[list[str]]:
    """The override lists that check a command line: ``[args]`` without ``-m``; under
    ``-m``/``--multirun`` every sweep (``seed=0,1``, ``range(..)``, ``choice(..)``) at its
    first value, then each other value of each sweep once, so that a bad key or value is one
    line before hydra starts (hydra's own multirun error is a multi-line report, exit 1). A
    line this cannot rebuild (hydra's parser refuses it) is left to hydra: ``[]``."""
    if not any(a in ("-m", "--multirun") for a in args):
        return [args]
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    overrides = _strip_flags(args)
    try:
        parsed = parser.parse_overrides(overrides)
        options = [
            [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()]
            if o.is_sweep_override()
            else [o.input_line]
            for o in parsed
        ]
        base = [opts[0] for opts in options]
        variants = [base] + [
            [*base[:i], v, *base[i + 1 :]] for i, opts in enumerate(options) for v in opts[1:]
        ]
        for variant in variants:
            parser.parse_overrides(variant)  # rebuilt lines must parse as the user's did
    except Exception:  # noqa: BLE001 - hydra reports its own parse errors
        return []
    return variants


def precheck_overrides(overrides: list[str], cfg_dir: Path, config_name: str = "train") -> None:
    """Compose once with hydra's compose API; turn its errors into one-line messages."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import (
        ConfigCompositionException,
        MissingConfigException,
        OverrideParseException,
    )

    overrides = [o for o in _strip_flags(overrides) if not o.startswith(("hydra.", "+hydra."))]
    try:
        with initialize_config_dir(str(cfg_dir), version_base=None):
            cfg = compose(config_name, overrides=overrides)
    except (MissingConfigException, OverrideParseException, ConfigCompositionException) as e:
        _fail(composition_error(e, overrides, cfg_dir, config_name))
    bad = non_bool_override(cfg, overrides)
    if bad:
        _fail(f"{bad}: must be true or false")


def non_bool_override(cfg: Any, overrides: list[str]) -> str | None:
    """The first override that gives a boolean field of the composed ``cfg`` something other
    than ``true``/``false``, else ``None``: OmegaConf turns any nonzero number, ``yes`` or
    ``on`` into True (``progress=2``, ``agent.normalize_obs=2`` trained silently)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import BooleanNode, DictConfig, OmegaConf

    for o in OverridesParser.create().parse_overrides(overrides):
        if o.is_delete() or o.is_sweep_override():
            continue
        parent_key, _, name = o.key_or_group.rpartition(".")
        parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
        if not isinstance(parent, DictConfig) or name not in parent:
            continue
        node = parent._get_node(name)
        if isinstance(node, BooleanNode) and not isinstance(o.value(), bool):
            return o.input_line
    return None


def composition_error(e: Exception, overrides: list[str], cfg_dir: Path, config_name: str) -> str:
    """The one line for an error of hydra's composition of ``overrides``: the override and
    the key it names, the value, and what is allowed."""
    from hydra.errors import MissingConfigException, OverrideParseException

    if isinstance(e, MissingConfigException):
        group = (e.missing_cfg_file or "").split("/")[0]
        choice = next((o for o in overrides if o.startswith(f"{group}=")), group)
        options = [o for o in (e.options or []) if not o.endswith("_schema") and o != "_generic"]
        return f"{choice}: allowed values are {options}"
    if isinstance(e, OverrideParseException):
        return str(e).splitlines()[0] + " (overrides look like key=value)"
    cause = e.__cause__
    key = getattr(cause, "full_key", None) or "?"
    names = [(o.lstrip("+~"), o.lstrip("+~").split("=")[0]) for o in overrides]
    arg = next((o for o, name in names if name == key), None)
    if arg is None:  # a key inside an open dict comes relative (learning_rate for
        # population.hparams.learning_rate), an unknown group whole (agent.team_hidden_sizes)
        arg = next((o for o, n in names if n.endswith(f".{key}") or n.startswith(f"{key}.")), key)
    first = str(cause).splitlines()[0] if cause else str(e).splitlines()[0]
    if type(cause).__name__ in ("ConfigAttributeError", "ConfigKeyError"):
        allowed = _allowed_keys(cfg_dir, key, config_name)
        return f"{arg}: unknown key {key!r}; allowed keys here: {allowed}"
    return f"{arg}: {first}"


#: Each command's host-side checks of its typed config that need no run ("module:function",
#: raising ValueError naming the key). A new command adds its own: the bad-input table test
#: (tests/training/test_bad_input_table.py) covers every command listed in COMMANDS.
VALIDATORS = {
    "train": "hordax.training.trainers:validate",
    "bench": "hordax.training.bench:validate_bench",
    "backtest": "hordax.training.backtest:validate_backtest",
    "eval": "hordax.training.evaluation:validate_eval",
    "suite": "hordax.training.suite:validate_suite",
}


def _added_key(node: Any, prefix: str = "") -> tuple[str, list[str]] | None:
    """``(dotted name, the node's schema fields)`` of a key that is not a field of its node's
    schema, else ``None``. Hydra's ``+key=value`` adds one even to a typed config, and
    ``OmegaConf.to_object`` then sets it as a stray attribute that nothing reads: the run
    ignored it. Open dicts (``env.params``, ``population.hparams``, ...) take any key."""
    import dataclasses

    from omegaconf import DictConfig, OmegaConf

    schema = OmegaConf.get_type(node)
    if not dataclasses.is_dataclass(schema):
        return None
    fields = [f.name for f in dataclasses.fields(schema)]
    for k in node:
        if k not in fields:
            return f"{prefix}{k}", sorted(fields)
        child = node._get_node(k)
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
            found = _added_key(child, f"{prefix}{k}.")
            if found:
                return found
    return None


def check_config(command: str, dict_cfg: Any, run_dir: str | None = None) -> tuple[Any, Any]:
    """``(typed config, what its validator returns)`` for a composed ``dict_cfg``; bad input
    exits 2 with one line (and removes the run's still-empty ``run_dir``)."""
    import importlib

    from omegaconf import OmegaConf

    added = _added_key(dict_cfg)
    if added:  # e.g. +trainer.num_envz=3
        key, allowed = added
        _fail(f"{key}: unknown key {key!r}; allowed keys here: {allowed}", run_dir=run_dir)
    if command == "train":  # agent=ensemble: K members unless population.size is given
        from hordax.training.config import apply_members

        apply_members(dict_cfg)
    try:
        cfg = OmegaConf.to_object(dict_cfg)
    except Exception as e:  # missing mandatory values and the like
        _fail(str(e).splitlines()[0], run_dir=run_dir)
    module, _, name = VALIDATORS[command].partition(":")
    try:
        return cfg, getattr(importlib.import_module(module), name)(cfg)
    except (ValueError, TypeError) as e:  # ConfigError is a ValueError
        _fail(str(e), run_dir=run_dir)


def _train_task(dict_cfg) -> None:
    """The hydra task: DictConfig -> dataclasses -> validate -> make env -> train."""
    import dataclasses

    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from hordax.envs.registry import make
    from hordax.training.core.report import NonFiniteError
    from hordax.training.host.checkpoint import CheckpointError, NoCheckpointError
    from hordax.training.host.loop import train_and_log
    from hordax.training.host.rundir import RunDirError, check_free
    from hordax.training.host.sharding import is_primary

    run_dir = _shared_run_dir(HydraConfig.get().runtime.output_dir)
    overrides = list(HydraConfig.get().overrides.task)
    resume = bool(dict_cfg.resume)
    if resume and dict_cfg.overwrite:
        _fail(f"overwrite=true: cannot be combined with resume={dict_cfg.resume}")
    # The default (timestamped) directory was not checked before hydra; in a multi-process
    # run only process 0 checks (the others share its directory, which it may fill first).
    # Failing here, before validation and compiling, is only early: train_and_log claims the
    # directory (check, clear with overwrite=true, write config.yaml and overrides.json).
    if not resume and is_primary():
        try:
            check_free(run_dir, bool(dict_cfg.overwrite))
        except RunDirError as e:
            _fail(str(e))
    own_dir = None if resume else run_dir  # removed if the run fails before training
    cfg, resolved = check_config("train", dict_cfg, own_dir)
    cfg = dataclasses.replace(cfg, run_dir=run_dir)
    try:
        env, env_params = make(cfg.env.id, params=dict(cfg.env.params), **dict(cfg.env.kwargs))
    except (ValueError, TypeError) as e:
        _fail(env_error(e), run_dir=own_dir)
    files = {  # written by train_and_log once it has claimed the directory (fresh runs)
        "config.yaml": OmegaConf.to_yaml(dict_cfg, resolve=True),
        OVERRIDES_FILE: strict_json.dumps(overrides, indent=1),
    }
    from hordax.training.evaluation import train_hooks

    try:
        hooks = train_hooks(cfg, env, env_params, resolved)
    except ValueError as e:  # e.g. curriculum.field not in the env's params
        _fail(str(e), run_dir=own_dir)
    try:
        summary = train_and_log(cfg, env, env_params, resolved, hooks, files)
    except RunDirError as e:  # another run took the directory since the check above
        _fail(str(e))
    except NoCheckpointError as e:
        finished = os.path.join(run_dir, "summary.json")
        if os.path.isfile(finished):  # not "start it again with ... overwrite=true"
            _fail(f"{e}: the run finished without checkpoints (checkpoint.every=0), so there is"
                  f" nothing to continue; its results are in {finished}")  # fmt: skip
        _fail(f"{e}: it stopped before its first checkpoint (or ran with checkpoint.every=0);"
              f" start it again with: {restart_command(overrides, run_dir)}")  # fmt: skip
    except CheckpointError as e:
        _fail(str(e), run_dir=own_dir)
    except NonFiniteError as e:
        _fail(str(e), code=3)
    except ValueError as e:  # e.g. a mesh that does not fit, a shape the agent cannot handle
        _fail(str(e), run_dir=own_dir)
    except KeyboardInterrupt:
        _interrupted(run_dir, overrides)
    except OSError as e:  # disk full, read-only, a path in the way: not a traceback
        _fail(f"{os_error(e)} (the run could not write its files); {_stands(run_dir, overrides)}",
              code=1)  # fmt: skip
    if cfg.ensemble.enabled:  # agent=ensemble: members and ensembles on validation
        from hordax.training.ensemble import add_ensemble_to_summary

        summary = add_ensemble_to_summary(cfg, summary, run_dir)
    print(strict_json.dumps(summary), flush=True)


def _interrupted(run_dir: str, overrides: list[str]) -> None:
    """Ctrl-C: one line saying where the run stands and how to go on; exit 130."""
    print(f"hordax: interrupted: {_stands(run_dir, overrides)}", file=sys.stderr, flush=True)
    raise SystemExit(130)


def _stands(run_dir: str, overrides: list[str]) -> str:
    """Where a stopped run stands and how to go on (its newest checkpoint, or none)."""
    from hordax.training.host.checkpoint import committed_steps

    # Not a new Checkpointer: the stopped run's orbax thread may still be committing a step.
    steps = committed_steps(run_dir)
    if not steps:
        return f"no checkpoint yet; start it again with: {restart_command(overrides, run_dir)}"
    return f"last checkpoint after chunk {steps[-1]}; continue with: hordax train resume={run_dir}"


def _bench_task(dict_cfg) -> None:
    """The hydra task of ``hordax bench``: measure, print one JSON line, append to the CSV
    (the sweep directory's under ``-m``) and redraw the PNG plot beside it."""
    from hydra.core.hydra_config import HydraConfig

    from hordax.training.bench import append_csv, plot_csv, run_bench

    hc = HydraConfig.get()
    cfg, _ = check_config("bench", dict_cfg)
    try:
        row = run_bench(cfg)
    except (ValueError, TypeError) as e:
        _fail(env_error(e))
    out_dir = hc.sweep.dir if hc.mode.name == "MULTIRUN" else hc.runtime.output_dir
    csv_path = os.path.join(out_dir, cfg.results)
    try:
        os.makedirs(os.path.dirname(csv_path), exist_ok=True)
        append_csv(csv_path, row)
        plot_csv(csv_path, os.path.splitext(csv_path)[0] + ".png")
    except OSError as e:
        _fail(os_error(e))
    print(strict_json.dumps(row), flush=True)


def _app_task(command: str, dict_cfg: Any, run: str, *args: Any) -> None:
    """An app's hydra task body: typed config and its checks, ``run`` ("module:function",
    its ``ValueError``/``TypeError`` one line, exit 2), one JSON line on stdout."""
    import importlib

    cfg, _ = check_config(command, dict_cfg)
    module, _, name = run.partition(":")
    try:
        row = getattr(importlib.import_module(module), name)(cfg, *args)
    except (ValueError, TypeError) as e:
        _fail(str(e))
    except OSError as e:  # e.g. out= in a folder that cannot be made
        _fail(os_error(e))
    print(strict_json.dumps(row), flush=True)


def _backtest_task(dict_cfg) -> None:
    """The hydra task of ``hordax backtest``: table, curves and plot; one JSON line."""
    _app_task("backtest", dict_cfg, "hordax.training.backtest:run_backtest")


def _eval_task(dict_cfg) -> None:
    """The hydra task of ``hordax eval``: evaluate a saved agent; one JSON line."""
    _app_task("eval", dict_cfg, "hordax.training.evaluation:run_eval")


def _compose_train(overrides: list[str], extra: list[str]) -> Any:
    """The ``train`` config ``overrides`` (then ``extra``) compose to, as ``hordax train``
    would, from inside another hydra task (``hordax suite``) or a plain script."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    cfg_dir = config_dir()
    args = rewrite_env_override([*overrides, *extra], cfg_dir)
    _register_schemas()  # from a script (examples/manip_gif.py) no hydra main stored them
    GlobalHydra.instance().clear()  # inside `hordax suite`'s own hydra task
    with initialize_config_dir(str(cfg_dir), version_base=None):
        return compose("train", overrides=args)


def run_config_changes(overrides: list[str], run_dir: str) -> list[str]:
    """Where the run saved in ``run_dir`` (its ``config.yaml``) differs from the config
    ``overrides`` compose to now, on the keys that make a run what it is (the checkpoint's
    ``COMPAT_KEYS``: env, agent, trainer, population, curriculum, seed): ``key=SAVED -> NOW``
    strings, ``[]`` if none. Equal overrides compose to another config when a tuned file or a
    default changed since the run; ``hordax suite`` must not reuse such a run. An option
    hordax added since the run, at its default now, is no change."""
    from omegaconf import OmegaConf
    from yaml import YAMLError

    from hordax.training.host.checkpoint import compat_config, compat_defaults, config_changes

    def flat(cfg: Any) -> dict:
        plain = OmegaConf.to_container(cfg, resolve=True)
        return json.loads(strict_json.dumps(compat_config(plain), default=str))

    try:
        saved = flat(OmegaConf.load(os.path.join(run_dir, "config.yaml")))
    except (OSError, ValueError, YAMLError) as e:
        return [f"config.yaml unreadable ({e})"]
    composed = _compose_train(overrides, ["progress=false"])
    now = flat(composed)
    defaults = compat_defaults(OmegaConf.to_object(composed))  # the config classes' defaults
    return [
        f"{k}={before!r} -> {after!r}" for k, before, after in config_changes(saved, now, defaults)
    ]


def train_in_process(
    overrides: list[str], run_dir: str, resume: bool = False, overwrite: bool = False
) -> dict:
    """One ``hordax train`` run in this process (``hordax suite``, examples): the same
    composition, checks, files and host loop, with its end-of-run evaluation off (the suite
    runs ``hordax eval``'s). A fresh run refuses a ``run_dir`` that holds a run
    (:class:`~hordax.training.host.rundir.RunDirError`, before training) unless
    ``overwrite`` (or ``overwrite=true`` in ``overrides``), which replaces that run; with
    ``resume`` the run in ``run_dir`` continues from its newest checkpoint (``hordax train
    resume=run_dir``; its files are kept). Returns the summary."""
    import dataclasses

    from omegaconf import OmegaConf

    from hordax.envs.registry import make
    from hordax.training.evaluation import train_hooks
    from hordax.training.host.loop import train_and_log

    extra = ["eval.episodes=0", "progress=false", *([f"resume={run_dir}"] if resume else [])]
    dict_cfg = _compose_train(overrides, extra)
    cfg, resolved = check_config("train", dict_cfg)
    cfg = dataclasses.replace(cfg, run_dir=run_dir, overwrite=cfg.overwrite or overwrite)
    env, env_params = make(cfg.env.id, params=dict(cfg.env.params), **dict(cfg.env.kwargs))
    files = {
        "config.yaml": OmegaConf.to_yaml(dict_cfg, resolve=True),
        OVERRIDES_FILE: strict_json.dumps(overrides, indent=1),
    }
    hooks = train_hooks(cfg, env, env_params, resolved)
    return train_and_log(cfg, env, env_params, resolved, hooks, files)


def _suite_task(dict_cfg) -> None:
    """The hydra task of ``hordax suite``: train and evaluate every row; one JSON line."""
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    run = "hordax.training.suite:run_suite"
    _app_task("suite", dict_cfg, run, train_in_process, log, run_config_changes)


COMMANDS = {
    "train": ("train", _train_task),
    "eval": ("eval", _eval_task),
    "suite": ("suite", _suite_task),
    "bench": ("bench", _bench_task),
    "backtest": ("backtest", _backtest_task),
}


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``hordax`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        raise SystemExit(0 if argv else 2)
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        _fail(f"unknown command {command!r}; allowed: {sorted(COMMANDS)}\n{USAGE}")
    config_name, task_fn = COMMANDS[command]
    # One XLA host device per CPU core, before jax initializes (DESIGN: use every core).
    from hordax.training.host.sharding import use_all_cpu_cores

    use_all_cpu_cores()

    import hydra

    cfg_dir = config_dir()
    if command == "train":
        rest = rewrite_env_override(resume_overrides(run_dir_override(rest)), cfg_dir)
        primary = True
        if _wants_distributed(rest):
            _init_distributed()
            import jax

            primary = jax.process_index() == 0
            if not primary:  # only process 0 writes files (hydra's included)
                rest = [*rest, "hydra.output_subdir=null"]
        if primary:  # the others share process 0's directory, which it may fill first
            check_run_dir_early(rest)
    elif command in ("backtest", "eval"):  # hordax backtest RUN_DIR ... -> run_dir=RUN_DIR
        rest = [a if "=" in a or a.startswith("-") else f"run_dir={a}" for a in rest]
        if command == "eval":  # its env_params dict is open (keys checked by hordax.make)
            rest = [f"++{a}" if a.startswith("env_params.") else a for a in rest]
    else:  # bench: env=<id>[,<id>...] names ids (swept under -m), not env config files
        rest = [f"env.id={a[4:]}" if a.startswith("env=") else a for a in rest]
        rest = [f"++{a}" if a.startswith(("env.params.", "env.kwargs.")) else a for a in rest]
    _register_schemas()
    for variant in sweep_variants(rest):  # each value of a sweep (-m a=1,2) once
        precheck_overrides(variant, cfg_dir, config_name)
    task = hydra.main(version_base=None, config_path=str(cfg_dir), config_name=config_name)(task_fn)
    sys.argv = [f"hordax {command}", *rest]
    try:
        task()
    except KeyboardInterrupt:  # before training started (the train task handles the rest)
        print(f"hordax: interrupted: {command} stopped", file=sys.stderr, flush=True)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
