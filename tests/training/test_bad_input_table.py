"""The bad-input table (issue #18): every CLI key and every env params field, given a wrong
type, a non-finite value and out-of-range values, gets one line naming it and exit code 2.

The table is generated, so new keys, commands and envs are covered without editing it:

- CLI keys: for every command in ``cli.COMMANDS`` (train, bench, backtest, and any added
  later: each must list its checks in ``cli.VALIDATORS``), the default config and one
  config per option of each of its config groups (``agent=pqn``, ``agent=pql``, ...) are
  composed once; every typed leaf key of them (int, float, bool, str, lists) gets its cases.
- Env params: every field, at any depth, of the default params of every id in
  ``hordax.registered_envs(include_gymnax=True)``.

Cases run in-process along the CLI's own path (fast: no process, no run): an override is
parsed by hydra's parser and applied with the function hydra's ``compose`` applies
overrides with, its error turned into a line by ``cli.composition_error`` (what
``precheck_overrides`` prints), then ``cli.check_config`` (typed config + the command's
validator, ``SystemExit(2)`` with one line on stderr). Env params go through
``set_params`` and ``validate_params`` (the two steps of ``hordax.make`` after building the
env, built once per id here) and ``cli.env_error``. Two subprocess cases show the exit code
and the single stderr line of the real command.

Rules: a wrong type and a non-finite value must be refused, naming the key; an
out-of-range probe (negative, zero, huge, an unknown string, an empty list) may be valid,
but if it is refused, the refusal is one line naming the key (never a traceback or a
line about something else).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import math
import subprocess
import sys

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, ListConfig
from omegaconf.nodes import BooleanNode, FloatNode, IntegerNode, StringNode

import hordax
from hordax.envs.params import set_params
from hordax.envs.registry import validate_params
from hordax.training import cli

# --------------------------------------------------------------------------------------------
# CLI keys

#: What a command always gets on its command line (``hordax backtest RUN_DIR``), so that a
#: case tests its own key and not the missing one.
REQUIRED = {"backtest": ("run_dir=some/run",), "eval": ("run_dir=some/run",)}

#: Open dicts whose keys are not in any schema (checked elsewhere: env params below, the
#: population's and ensemble's own validation).
OPEN = ("env.params", "env.kwargs", "population.hparams", "ensemble.agents")

WRONG, NONFINITE, PROBE = "wrong type", "non-finite", "out of range"

#: Out-of-range probes that a defined range refuses (a sample, so that the probes are known
#: to reach the validators; the rule for the rest is "valid, or one line naming the key").
MUST_REFUSE = {
    ("train", "trainer.num_envs", "0"),
    ("train", "agent.gamma", "-1"),
    ("train", "agent.q_lambda", "-1"),
    ("train", "agent.n_step", "0"),
    ("train", "mesh.min_envs_per_device", "0"),
    ("train", "checkpoint.keep", "0"),
    ("train", "agent.network.hidden_sizes", "[0]"),
    ("bench", "num_envs", "-1"),
    ("bench", "mesh.data", "0"),
    ("backtest", "periods_per_year", "-1"),
    ("backtest", "split", "no-such-value"),
    ("train", "eval.episodes", "-1"),
    ("train", "eval.every", "-1"),
    ("train", "curriculum.name", "no-such-value"),
    ("train", "curriculum.min_level", "-1"),
    ("eval", "episodes", "0"),
    ("eval", "max_steps", "-1"),
    ("eval", "video", "no-such-value"),
}
MUST_REFUSE_ENV = {
    ("Aerial-Hover-v0", "quad.mass", -1.0),
    ("Aerial-Navigate-v0", "ctrl.max_tilt", 0.0),
    ("Debug-PointMass-v0", "dt", 0.0),
    ("StockTrading-v0", "buy_cost_pct", -1.0),
    ("CryptoTrading-v0", "start_hi", -1),
    ("CartPole-v1", "max_steps_in_episode", 2**40),  # does not fit int32 inside jit
    ("CartPole-v1", "gravity", 1e39),  # inf in float32
}


def _cases(node) -> list[tuple[str, str]]:
    """``[(value as typed on the command line, kind of case)]`` for one typed leaf."""
    if isinstance(node, BooleanNode):
        # (omegaconf reads an integer as a bool, 0 = false, so "2" is not a wrong type here)
        return [("abc", WRONG), ("nan", WRONG), ("[1]", WRONG)]
    if isinstance(node, IntegerNode):
        return [("abc", WRONG), ("2.5", WRONG), ("nan", NONFINITE), ("inf", NONFINITE)] + [
            (v, PROBE) for v in ("-1", "0", "-1000000000")
        ]
    if isinstance(node, FloatNode):
        return [("abc", WRONG), ("nan", NONFINITE), ("inf", NONFINITE), ("-inf", NONFINITE)] + [
            (v, PROBE) for v in ("-1", "0", "1e30")
        ]
    if isinstance(node, StringNode):
        return [("[1,2]", WRONG), ("no-such-value", PROBE)]
    if isinstance(node, ListConfig):
        elem = node._metadata.element_type
        out = [("abc", WRONG), ("[]", PROBE)]
        if elem in (int, float):
            out += [("[abc]", WRONG), ("[nan]", NONFINITE), ("[-1]", PROBE), ("[0]", PROBE)]
        return out
    return []


def _leaves(node: DictConfig, prefix: str = ""):
    for key in node:
        full = f"{prefix}{key}"
        if full.startswith(OPEN):
            continue
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            yield from _leaves(child, f"{full}.")
        else:
            yield full, child


def _bases(command: str) -> list[tuple[tuple[str, ...], DictConfig]]:
    """``[(group choice overrides, composed config)]``: the default, then one per option of
    each config group (an option that adds keys, e.g. ``agent=pql``, contributes them)."""
    config_name = cli.COMMANDS[command][0]
    cfg_dir = cli.config_dir()
    out = []
    required = list(REQUIRED.get(command, ()))
    with initialize_config_dir(str(cfg_dir), version_base=None):
        out.append(((), compose(config_name, overrides=required)))
        loader = GlobalHydra.instance().config_loader()
        groups = [g for g in loader.list_groups("") if g in out[0][1] and g != "hydra"]
        for group in groups:
            for option in loader.get_group_options(group):
                if option.endswith("_schema") or option.startswith("_"):
                    continue
                choice = (f"{group}={option}",)
                out.append((choice, compose(config_name, overrides=[*required, *choice])))
    return out


def _run(command: str, base: DictConfig, override: str) -> tuple[int, str]:
    """``(exit code, stderr)`` of the CLI's checks of ``base`` plus ``override`` (0, '' if
    the config is valid)."""
    cfg = copy.deepcopy(base)
    try:
        ConfigLoaderImpl._apply_overrides_to_config(
            OverridesParser.create().parse_overrides([override]), cfg
        )
    except ConfigCompositionException as e:
        config_name = cli.COMMANDS[command][0]
        return 2, f"hordax: error: {cli.composition_error(e, [override], _CFG_DIR, config_name)}\n"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            cli.check_config(command, cfg)
        except SystemExit as e:
            return e.code, err.getvalue()
    return 0, err.getvalue()


_CFG_DIR = cli.config_dir()


@pytest.fixture(scope="module")
def cli_results():
    """``[(command, group choices, key, value, kind, exit code, stderr)]``, each key once
    per command (under the first config that has it)."""
    cli._register_schemas()
    results = []
    for command in cli.COMMANDS:
        seen = set()
        for choice, base in _bases(command):
            # the base itself is valid: a refusal below is about the case's own key
            with contextlib.redirect_stderr(io.StringIO()) as err:
                cli.check_config(command, copy.deepcopy(base))  # SystemExit here: a bad base
            assert not err.getvalue(), err.getvalue()
            for key, node in _leaves(base):
                if key in seen:
                    continue
                seen.add(key)
                for value, kind in _cases(node):
                    code, err = _run(command, base, f"{key}={value}")
                    results.append((command, choice, key, value, kind, code, err))
    return results


@pytest.mark.slow
def test_table__covers_every_command_and_its_keys(cli_results):
    """Every command has a validator; the table holds each command's keys (agent variants
    included) with all three kinds of case."""
    assert set(cli.COMMANDS) <= set(cli.VALIDATORS), "a command without its VALIDATORS entry"
    keys = {(c, k) for c, _, k, *_ in cli_results}
    for must in [
        ("train", "trainer.num_envs"),
        ("train", "agent.gamma"),
        ("train", "agent.q_lambda"),  # agent=pqn's schema
        ("train", "agent.n_step"),  # agent=pql's schema
        ("train", "ensemble.temperature"),
        ("bench", "num_envs"),
        ("backtest", "periods_per_year"),
    ]:
        assert must in keys, must
    kinds = {kind for *_, kind, _, _ in cli_results}
    assert kinds == {WRONG, NONFINITE, PROBE}
    cases = {(c, k, v) for c, _, k, v, *_ in cli_results}
    assert cases >= MUST_REFUSE, MUST_REFUSE - cases
    assert len(keys) >= 95, len(keys)


def test_table__every_bad_cli_value_is_one_line_naming_the_key(cli_results):
    """Wrong types and non-finite values are refused; out-of-range probes are either valid
    or refused; every refusal is exit code 2 and one 'hordax: error:' line naming the key."""
    problems = []
    for command, choice, key, value, kind, code, err in cli_results:
        case = f"hordax {command} {' '.join(choice)} {key}={value} ({kind})"
        lines = err.strip().splitlines()
        if code == 0 and (kind != PROBE or (command, key, value) in MUST_REFUSE):
            problems.append(f"{case}: accepted")
        elif code != 0 and (
            code != 2 or len(lines) != 1 or not lines[0].startswith("hordax: error: ")
        ):
            problems.append(f"{case}: exit {code}, stderr {err!r}")
        elif code != 0 and key not in lines[0]:
            problems.append(f"{case}: does not name {key}: {lines[0]}")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------
# env params of every registered id

#: ids that cannot be built offline (gymnax downloads MNIST when the env is constructed).
NEEDS_DOWNLOAD = {"MNISTBandit-bsuite"}


def _fields(params, prefix=""):
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if dataclasses.is_dataclass(value):
            yield f"{prefix}{f.name}", value, None
            yield from _fields(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", value, f


def _env_cases(value, field) -> list[tuple[object, str]]:
    if field is None:  # a nested group given a scalar
        return [("abc", WRONG), (1.0, WRONG)]
    shape = np.shape(value)
    dtype = np.asarray(value).dtype

    def full(v):  # a list as typed on the command line; a big data array as an array
        if not shape:
            return v
        return np.full(shape, v).tolist() if np.prod(shape) <= 64 else np.full(shape, v)

    if dtype == np.bool_:
        return [("abc", WRONG), (full(2), WRONG), (full(0.5), WRONG)]
    if np.issubdtype(dtype, np.integer):
        return [("abc", WRONG), (full(2.5), WRONG), (full(math.nan), NONFINITE)] + [
            (full(v), PROBE) for v in (-1, 0, 2**40)
        ]
    if np.issubdtype(dtype, np.floating):
        inf_ok = field.metadata.get("allow_inf", False)
        out = [("abc", WRONG), (full(True), WRONG), (full(math.nan), NONFINITE)]
        out += [(full(math.inf), PROBE if inf_ok else NONFINITE)]
        return out + [(full(v), PROBE) for v in (-1.0, 0.0, 1e39)]
    return []


@pytest.fixture(scope="module")
def env_results():
    results, made = [], []
    for env_id in hordax.registered_envs(include_gymnax=True):
        try:
            env, params = hordax.make(env_id)
        except Exception as e:
            assert env_id in NEEDS_DOWNLOAD, f"{env_id}: {e!r}"
            continue
        made.append(env_id)
        for path, value, field in _fields(params):
            for bad, kind in _env_cases(value, field):
                try:
                    validate_params(env, set_params(params, {path: bad}))
                    code, line = 0, ""
                except ValueError as e:  # what the CLI turns into its line, with exit 2
                    code, line = 2, cli.env_error(e)
                results.append((env_id, path, bad, kind, code, line))
    return made, results


@pytest.mark.slow
def test_env_table__covers_every_registered_id_and_nested_fields(env_results):
    made, results = env_results
    every = set(hordax.registered_envs(include_gymnax=True))
    assert set(made) == every - NEEDS_DOWNLOAD
    paths = {(e, p) for e, p, *_ in results}
    assert ("CartPole-v1", "gravity") in paths and ("Aerial-Hover-v0", "quad.mass") in paths
    assert ("Grid-XLand-Trials-R1-9x9-v0", "benchmark.goals") in paths
    cases = {(e, p, b) for e, p, b, *_ in results if not isinstance(b, list | str | np.ndarray)}
    assert cases >= MUST_REFUSE_ENV, MUST_REFUSE_ENV - cases
    assert {e for e, *_ in results} == every - NEEDS_DOWNLOAD


@pytest.mark.slow
def test_env_table__every_bad_params_value_is_one_line_naming_the_field(env_results):
    """Wrong types and non-finite values are refused, ``max_steps_in_episode`` below 1 too;
    every refusal is one line naming ``env.params.<field>`` (nested: ``env.params.quad.mass``)."""
    _, results = env_results
    problems = []
    for env_id, path, bad, kind, code, line in results:
        case = f"{env_id} env.params.{path}={bad!r} ({kind})"
        must_refuse = (
            kind != PROBE
            or (path == "max_steps_in_episode" and np.min(bad) < 1)
            or (np.ndim(bad) == 0 and (env_id, path, bad) in MUST_REFUSE_ENV)
        )
        if code == 0 and must_refuse:
            problems.append(f"{case}: accepted")
        elif code and ("\n" in line or f"env.params.{path}" not in line):
            problems.append(f"{case}: {line!r}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:60])


# --------------------------------------------------------------------------------------------
# the real command


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["train", "env=CartPole-v1", "env.params.gravity=abc"],
            "hordax: error: env.params.gravity='abc': must be a finite number",
        ),
        (["bench", "repeats=nan"], "hordax: error: repeats=nan: Value 'nan' of type 'float'"),
    ],
)
def test_table__as_a_process_exit_2_and_one_line(args, line, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "hordax.training.cli", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith(line)
    assert proc.stdout == "" and not any(tmp_path.rglob("*.yaml"))
