"""PQL hyperparameters (the hydra schema of ``hordax/configs/agent/pql.yaml``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hordax.agents.networks import validate_layers
from hordax.validation import need

PQL_MODES = ("sync", "parallel")
PQL_PARALLEL_SCHEDULES = ("async", "serial")


@dataclass
class PQLConfig:
    """Parallel Q-Learning, synchronous schedule: deterministic tanh actor, clipped double-Q
    critic, n-step returns, replay buffer in the train state, mixed exploration."""

    name: str = "pql"
    mode: str = "sync"
    """sync: one jitted schedule that realizes the ratios exactly (``train(key)``);
    parallel: actor, V-learner and P-learner concurrently on their own devices (or
    asynchronously on one), ratios enforced by waiting and measured
    (``hordax.training.host.pql_parallel``; no populations, checkpoints or resume)."""
    parallel_schedule: str = "async"
    """Parallel mode: ``async`` (the roles run concurrently, which parameters a rollout or an
    update sees depends on timing: not reproducible) or ``serial`` (one role at a time, the
    next chosen by a fixed rule among the ready ones: one legal interleaving of the async
    schedule, bitwise reproducible, slower; for debugging and reproducible tests)."""
    parallel_groups_per_call: int = 1
    """Parallel mode: groups of beta_pv critic updates per V-learner call, and actor updates
    per P-learner call (> 1 amortizes the host overhead per call; must divide the actor
    updates per trainer update, beta_av * rollout_length / beta_pv)."""
    actor_lr: float = 5e-4
    """Adam step size of the actor."""
    critic_lr: float = 5e-4
    """Adam step size of the critic."""
    gamma: float = 0.99
    """Discount in [0, 1]."""
    n_step: int = 3
    """n-step returns (<= trainer.rollout_length); a rollout's last n - 1 steps wait in the
    train state for the next rollout, so every window is whole n steps (unless an episode
    ends)."""
    tau: float = 0.05
    """Polyak rate of the target critic, in (0, 1]."""
    batch_size: int = 1024
    """Transitions per critic / actor update (<= buffer_size)."""
    buffer_size: int = 100_000
    """Replay capacity in transitions (>= num_envs * rollout_length; circular)."""
    beta_av: float = 8.0
    """Critic (V-learner) updates per collection step (one step of all envs); together with
    trainer.rollout_length it must give a whole number of critic updates per update."""
    beta_pv: int = 2
    """Critic updates per actor (P-learner) update; must divide the critic updates per
    trainer update."""
    sigma_min: float = 0.05
    """Exploration noise std of env 0 (in units of the half action range)."""
    sigma_max: float = 0.8
    """Exploration noise std of the last env; envs in between are spaced linearly."""
    target_noise: float = 0.2
    """Target-policy smoothing noise std."""
    target_noise_clip: float = 0.5
    """Target-policy smoothing noise clip."""
    warmup_updates: int = 1
    """Trainer updates at the start that act uniformly at random (learning still runs)."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this in the critic targets (> 0)."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip of both learners (> 0)."""
    normalize_obs: bool = True
    """Running observation normalization. The replay buffer stores raw observations; the
    running statistics (``RunningStats``, as in the NormalizeObservation wrapper) live in
    the train state, and the actor's inputs and every sampled batch are normalized with the
    statistics current at that moment (no stale rows)."""
    distributional: bool = False
    """PQL-D: categorical critics (cross-entropy to the projected n-step target)."""
    num_atoms: int = 51
    """Atoms of the distributional critic's support (>= 2)."""
    v_min: float = -10.0
    """Lowest atom (in reward_scale-d return units)."""
    v_max: float = 10.0
    """Highest atom (> v_min)."""
    hidden_sizes: list[int] = field(default_factory=lambda: [256, 256])
    """MLP widths of actor and critics."""
    activation: str = "elu"
    """One of tanh, relu, swish, gelu, elu."""


def validate_pql(cfg: PQLConfig, num_envs: int, rollout_length: int) -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
    fin = math.isfinite
    need(
        cfg.mode in PQL_MODES, "agent.mode", repr(cfg.mode), f"allowed values are {list(PQL_MODES)}"
    )
    need(
        cfg.parallel_schedule in PQL_PARALLEL_SCHEDULES,
        "agent.parallel_schedule",
        repr(cfg.parallel_schedule),
        f"allowed values are {list(PQL_PARALLEL_SCHEDULES)}",
    )
    for k in ("actor_lr", "critic_lr", "max_grad_norm", "reward_scale"):
        v = getattr(cfg, k)
        need(fin(v) and v > 0, f"agent.{k}", v, "must be a finite number > 0")
    need(0.0 <= cfg.gamma <= 1.0, "agent.gamma", cfg.gamma, "must be in [0, 1]")
    need(0.0 < cfg.tau <= 1.0, "agent.tau", cfg.tau, "must be in (0, 1]")
    need(cfg.n_step >= 1, "agent.n_step", cfg.n_step, "must be an integer >= 1")
    need(
        cfg.n_step <= rollout_length,
        "agent.n_step",
        cfg.n_step,
        f"must be <= trainer.rollout_length={rollout_length} (windows stay in one rollout)",
    )
    need(cfg.batch_size >= 1, "agent.batch_size", cfg.batch_size, "must be an integer >= 1")
    need(
        cfg.buffer_size >= num_envs * rollout_length,
        "agent.buffer_size",
        cfg.buffer_size,
        f"must hold one rollout, num_envs * rollout_length = {num_envs * rollout_length}",
    )
    need(
        cfg.batch_size <= cfg.buffer_size,
        "agent.batch_size",
        cfg.batch_size,
        f"must be <= agent.buffer_size={cfg.buffer_size}",
    )
    need(fin(cfg.beta_av) and cfg.beta_av > 0, "agent.beta_av", cfg.beta_av, "must be > 0")
    need(cfg.beta_pv >= 1, "agent.beta_pv", cfg.beta_pv, "must be an integer >= 1 (> 0)")
    critic = cfg.beta_av * rollout_length
    need(
        abs(critic - round(critic)) < 1e-9 and round(critic) >= 1,
        "agent.beta_av",
        cfg.beta_av,
        f"beta_av * trainer.rollout_length = {critic} must be a whole number >= 1 "
        "(critic updates per trainer update)",
    )
    need(
        round(critic) % cfg.beta_pv == 0,
        "agent.beta_pv",
        cfg.beta_pv,
        f"must divide the critic updates per trainer update (beta_av * rollout_length = "
        f"{round(critic)})",
    )
    g = cfg.parallel_groups_per_call
    groups = round(critic) // cfg.beta_pv
    need(
        g >= 1 and groups % g == 0,
        "agent.parallel_groups_per_call",
        g,
        f"must be an integer >= 1 dividing the actor updates per trainer update "
        f"(beta_av * rollout_length / beta_pv = {groups})",
    )
    need(cfg.sigma_min >= 0.0, "agent.sigma_min", cfg.sigma_min, "must be >= 0")
    need(
        cfg.sigma_min <= cfg.sigma_max and fin(cfg.sigma_max),
        "agent.sigma_max",
        cfg.sigma_max,
        f"must be finite and >= agent.sigma_min={cfg.sigma_min}",
    )
    need(
        cfg.target_noise >= 0 and fin(cfg.target_noise),
        "agent.target_noise",
        cfg.target_noise,
        "must be finite and >= 0",
    )
    need(
        cfg.target_noise_clip >= 0 and fin(cfg.target_noise_clip),
        "agent.target_noise_clip",
        cfg.target_noise_clip,
        "must be finite and >= 0",
    )
    need(cfg.warmup_updates >= 0, "agent.warmup_updates", cfg.warmup_updates, "must be >= 0")
    need(cfg.num_atoms >= 2, "agent.num_atoms", cfg.num_atoms, "must be an integer >= 2")
    need(
        fin(cfg.v_min) and fin(cfg.v_max) and cfg.v_max > cfg.v_min,
        "agent.v_max",
        cfg.v_max,
        f"must be finite and > agent.v_min={cfg.v_min}",
    )
    validate_layers(cfg.hidden_sizes, cfg.activation, "agent.")
