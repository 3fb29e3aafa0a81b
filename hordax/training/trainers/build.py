"""A run's config to its trainer: the full check of a ``TrainConfig`` and the trainer it asks
for (one algorithm, a population of it, or a mixed ensemble), both through the registry."""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Any

from hordax.envs.core import env_name, is_multi_agent
from hordax.training.config import (
    ConfigError,
    TrainConfig,
    is_mixed,
    resolve,
    validate_ensemble,
    validate_population,
    validate_run,
    validate_seed,
    validate_trainer,
)
from hordax.training.config.curriculum import start_level, validate_curriculum
from hordax.training.core.types import Resolved
from hordax.training.trainers.curriculum import CurriculumTrainer
from hordax.training.trainers.mixed import MixedTrainer, validate_mixed
from hordax.training.trainers.population import PopulationTrainer
from hordax.training.trainers.registry import algorithm
from hordax.validation import need

_need = functools.partial(need, error=ConfigError)


def _as_config_error(check: Any, *args: Any) -> None:
    try:
        check(*args)
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(str(e)) from None


def validate(cfg: TrainConfig) -> Resolved:
    """Check ranges and relations on the host (``ConfigError`` naming the key); return the
    derived sizes."""
    _as_config_error(algorithm, cfg.agent.name)
    alg = algorithm(cfg.agent.name)
    validate_run(cfg)
    _as_config_error(validate_ensemble, cfg.ensemble)
    if is_mixed(cfg):  # before the population: a mixed run takes no population.hparams
        _as_config_error(validate_mixed, cfg)
    _as_config_error(validate_population, cfg.population, alg.traced_hparams)
    ens = cfg.ensemble
    _need(
        not ens.enabled or bool(ens.algorithms) or cfg.population.size >= 2,
        "ensemble.members",
        ens.members,
        "agent=ensemble needs at least 2 members (ensemble.members or population.size)",
    )
    validate_seed(cfg)
    _as_config_error(alg.validate, cfg.agent, cfg.trainer)
    validate_member_hparams(cfg, alg)
    if alg.validate_run is not None:
        _as_config_error(alg.validate_run, cfg.agent, cfg)
    if ens.enabled and alg.check_member is not None:  # may it be an ensemble member?
        _as_config_error(alg.check_member, cfg.agent)
    _as_config_error(validate_curriculum, cfg.curriculum, cfg)
    return resolve(cfg)


def _with_value(agent_cfg: Any, name: str, value: Any) -> Any:
    """A copy of ``agent_cfg`` with ``name = value``."""
    if dataclasses.is_dataclass(agent_cfg):
        return dataclasses.replace(agent_cfg, **{name: value})
    out = copy.copy(agent_cfg)
    setattr(out, name, value)
    return out


def validate_member_hparams(cfg: TrainConfig, alg: Any) -> None:
    """Every member's value in ``population.hparams`` passes the check of ``agent.<name>``
    (the population replaces the agent config's value with it inside the program, where
    nothing checks it); ``ConfigError`` naming the list, the member and the rule."""
    for name, values in cfg.population.hparams.items():
        values = list(values)
        for i, value in enumerate(values):
            try:
                alg.validate(_with_value(cfg.agent, name, value), cfg.trainer)
            except ValueError as e:
                raise ConfigError(f"population.hparams.{name}={values}: member {i}: {e}") from None


def make_train(trainer_cfg: Any, agent_cfg: Any, env: Any, env_params: Any) -> Any:
    """``train(key) -> (final state, metrics [num_updates])`` of one run of the algorithm
    ``agent_cfg`` configures (``PPOConfig``, ``IPPOConfig``/``MAPPOConfig``, ``PQNConfig``,
    ``PQLConfig`` with ``mode='sync'``), checked as ``hordax train`` checks it (a
    ``ValueError`` naming ``trainer.*``/``agent.*``)."""
    name = getattr(agent_cfg, "name", None)
    _as_config_error(algorithm, name)
    alg = algorithm(name)
    validate_trainer(trainer_cfg)
    _as_config_error(alg.validate, agent_cfg, trainer_cfg)
    _need(
        getattr(agent_cfg, "mode", "sync") == "sync",
        "agent.mode",
        repr(getattr(agent_cfg, "mode", None)),
        "make_train needs one jitted program (mode='sync'); parallel mode runs host threads",
    )
    return alg.trainer(trainer_cfg, agent_cfg, env, env_params, resolve(trainer_cfg)).train


def make_trainer(cfg: TrainConfig, env: Any, env_params: Any, resolved: Resolved) -> Any:
    """The trainer a (validated) run config asks for: a mixed ensemble
    (``ensemble.algorithms``), a population (``population.size > 1``) or one run of
    ``agent.name``."""
    _need(
        not (cfg.ensemble.enabled and is_multi_agent(env)),
        "ensemble.enabled",
        cfg.ensemble.enabled,
        "agent=ensemble combines single-agent policies, and "
        f"{env_name(env)} is multi-agent (use agent=ippo or "
        "agent=mappo; population.size trains several seeds)",
    )
    if is_mixed(cfg):
        return MixedTrainer(cfg, env, env_params, resolved)
    trainer = algorithm(cfg.agent.name).trainer(cfg.trainer, cfg.agent, env, env_params, resolved)
    if cfg.population.size > 1:
        return PopulationTrainer(trainer, cfg.population.size, cfg.seed, cfg.population.hparams)
    cc = cfg.curriculum
    if cc.name != "none":
        level = start_level(cc, env_params, cfg.env.id)
        return CurriculumTrainer(trainer, cc.field, level)
    return trainer
