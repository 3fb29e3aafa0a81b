"""PQN hyperparameters (the hydra schema of ``hordax/configs/agent/pqn.yaml``)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from hordax.agents.networks import validate_layers
from hordax.agents.sgd import validate_sgd
from hordax.validation import need as shared_need


@dataclass
class QNetworkConfig:
    """MLP Q-network: Dense -> LayerNorm -> activation per hidden layer."""

    hidden_sizes: list[int] = field(default_factory=lambda: [128, 128])
    """Dense layer widths (>= 1 layer)."""
    activation: str = "relu"
    """One of tanh, relu, swish, gelu, elu."""
    layer_norm: bool = True
    """LayerNorm after every hidden dense layer (PQN's stabilizer; no target network)."""


@dataclass
class PQNConfig:
    """Parallelised Q-Network: online Peng's Q(lambda), no replay, no target network."""

    name: str = "pqn"
    learning_rate: float = 1e-4
    """Adam step size (linear decay to 0 when anneal_lr)."""
    anneal_lr: bool = False
    """Linear learning-rate decay to 0 over the run."""
    gamma: float = 0.99
    """Discount in [0, 1]."""
    q_lambda: float = 0.65
    """Trace parameter of the Q(lambda) targets, in [0, 1]."""
    epsilon_start: float = 1.0
    """Exploration rate at the first update (epsilon-greedy)."""
    epsilon_finish: float = 0.05
    """Exploration rate after the decay."""
    epsilon_decay: float = 0.1
    """Fraction of the run's updates over which epsilon decays linearly, in (0, 1]."""
    max_grad_norm: float = 10.0
    """Global gradient-norm clip (> 0)."""
    num_epochs: int = 2
    """Passes over each rollout batch."""
    num_minibatches: int = 4
    """Minibatches per epoch; must divide num_envs * rollout_length."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this in the targets (> 0)."""
    normalize_obs: bool = False
    """Running observation normalization (statistics saved with the agent)."""
    network: QNetworkConfig = field(default_factory=QNetworkConfig)


def validate_pqn(cfg: PQNConfig, batch_size: int | None = None) -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
    need = functools.partial(shared_need, prefix="agent.")

    fin = math.isfinite
    validate_sgd(cfg, batch_size)
    need(0.0 <= cfg.q_lambda <= 1.0, "q_lambda", cfg.q_lambda, "must be in [0, 1]")
    for k in ("epsilon_start", "epsilon_finish"):
        v = getattr(cfg, k)
        need(0.0 <= v <= 1.0, k, v, "must be in [0, 1]")
    need(0.0 < cfg.epsilon_decay <= 1.0, "epsilon_decay", cfg.epsilon_decay, "must be in (0, 1]")
    need(
        fin(cfg.reward_scale) and cfg.reward_scale > 0,
        "reward_scale",
        cfg.reward_scale,
        "must be > 0",
    )
    validate_layers(cfg.network.hidden_sizes, cfg.network.activation, "agent.network.")
