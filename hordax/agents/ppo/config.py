"""PPO hyperparameters (the hydra schema of ``hordax/configs/agent/ppo.yaml``)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from hordax.agents.networks import NetworkConfig, validate_network
from hordax.agents.sgd import validate_sgd
from hordax.validation import need as shared_need


@dataclass
class PPOConfig:
    """Proximal Policy Optimization (clipped surrogate, GAE, minibatch epochs)."""

    name: str = "ppo"
    learning_rate: float = 2.5e-4
    """Adam step size (annealed linearly to 0 when anneal_lr)."""
    anneal_lr: bool = True
    """Linear learning-rate decay to 0 over the whole run."""
    gamma: float = 0.99
    """Discount factor in [0, 1]."""
    gae_lambda: float = 0.95
    """GAE lambda in [0, 1]."""
    clip_eps: float = 0.2
    """Policy ratio clip (and value clip when clip_value)."""
    clip_value: bool = True
    """Clip the value update around the rollout's values (PPO2 style)."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient (>= 0)."""
    bounds_loss_coef: float = 0.0
    """Box actions: coefficient (>= 0) of a penalty on Gaussian means outside the action
    space's bounds, ``mean over rows of sum_i (max(0, mu_i - high_i) + max(0, low_i -
    mu_i))^2`` (rl_games' bound loss). The env clips sampled actions, so nothing else keeps
    the means inside: they can drift far past the bounds, and the deterministic (mean)
    action then sits on a bound while training's sampled actions averaged to a command
    inside. 0 (default): no term (the loss is unchanged)."""
    vf_coef: float = 0.5
    """Value loss coefficient (>= 0)."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip (> 0)."""
    num_epochs: int = 4
    """Passes over each rollout batch."""
    num_minibatches: int = 4
    """Minibatches per epoch; must divide num_envs * rollout_length."""
    normalize_advantages: bool = True
    """Standardize advantages within each minibatch."""
    normalize_obs: bool = False
    """Running observation normalization (statistics saved with the agent); not with
    network.torso='grid', whose integer codes it would scramble."""
    normalize_reward: bool = False
    """Scale rewards by the running std of the discounted return."""
    bootstrap_truncation: bool = True
    """Bootstrap ``V(final_observation)`` where an episode is truncated (the default:
    a time limit that is not part of the task). False: a truncation ends the return like a
    termination, JaxMARL's and PureJaxRL's treatment, for tasks whose fixed horizon is the
    task (MPE's 25 steps; see benchmarks/RESULTS.md, section 14)."""
    critic_obs: bool = False
    """The critic reads the env's critic_observation (asymmetric actor-critic; MAPPO's
    centralized critic); the env must provide one."""
    network: NetworkConfig = field(default_factory=NetworkConfig)


@dataclass
class IPPOConfig(PPOConfig):
    """Multi-agent PPO (IPPO): one PPO learner per team of a multi-agent env, parameters
    shared by the team's agents, the agent axis folded into the batch."""

    name: str = "ippo"
    agent_id: bool = False
    """Append each agent's one-hot slot id to its actor (and critic) input."""
    team_hidden_sizes: dict[str, list[int]] = field(default_factory=dict)
    """Per-team MLP widths ({team_name: [sizes]}); other teams use network.hidden_sizes."""
    team_ent_coef: dict[str, float] = field(default_factory=dict)
    """Per-team entropy coefficients ({team_name: coef >= 0}); other teams use ent_coef. A
    team named here keeps its coefficient whatever ``population.hparams.ent_coef`` says
    (e.g. a communicating speaker's and a moving listener's exploration set apart)."""


@dataclass
class MAPPOConfig(IPPOConfig):
    """MAPPO: IPPO with a centralized critic on the env's critic_observation (actors
    decentralized)."""

    name: str = "mappo"
    critic_obs: bool = True
    """Always on for MAPPO (the centralized critic)."""


#: Why ``network.rnn_size > 0`` is refused with critic observations (config and agent).
RECURRENT_CRITIC_OBS_RULE = (
    "a recurrent network reads one observation: not available with critic observations "
    "(agent.critic_obs=true, agent=mappo); allowed: 0"
)


def validate_ppo(cfg: PPOConfig, batch_size: int | None = None) -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""

    need = functools.partial(shared_need, prefix="agent.")

    finite = math.isfinite
    validate_sgd(cfg, batch_size)
    need(0.0 <= cfg.gae_lambda <= 1.0, "gae_lambda", cfg.gae_lambda, "must be in [0, 1]")
    need(finite(cfg.clip_eps) and cfg.clip_eps > 0, "clip_eps", cfg.clip_eps, "must be > 0")
    need(finite(cfg.ent_coef) and cfg.ent_coef >= 0, "ent_coef", cfg.ent_coef, "must be >= 0")
    need(
        finite(cfg.bounds_loss_coef) and cfg.bounds_loss_coef >= 0,
        "bounds_loss_coef",
        cfg.bounds_loss_coef,
        "must be >= 0",
    )
    need(finite(cfg.vf_coef) and cfg.vf_coef >= 0, "vf_coef", cfg.vf_coef, "must be >= 0")
    validate_network(cfg.network)
    need(
        not (cfg.normalize_obs and cfg.network.torso == "grid"),
        "normalize_obs",
        cfg.normalize_obs,
        "the network.torso='grid' embeds integer codes, which normalized observations "
        "are not (a tile's code would embed by its cell's running statistics); allowed: false",
    )
    rnn_size = int(cfg.network.rnn_size)
    need(
        not (rnn_size and cfg.critic_obs),
        "network.rnn_size",
        rnn_size,
        RECURRENT_CRITIC_OBS_RULE,
    )
    for team, sizes in dict(getattr(cfg, "team_hidden_sizes", None) or {}).items():
        need(
            len(sizes) >= 1 and all(int(h) >= 1 for h in sizes),
            f"team_hidden_sizes.{team}",
            list(sizes),
            "must be a non-empty list of integers >= 1",
        )
    if getattr(cfg, "name", "") == "mappo":
        need(cfg.critic_obs, "critic_obs", cfg.critic_obs, "must be true for agent=mappo")
