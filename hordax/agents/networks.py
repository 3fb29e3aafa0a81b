"""Network torsos and heads shared by all agents (flax.linen).

Torsos map an observation batch ``[B, *obs_shape]`` to features ``[B, F]``:
:class:`MLP` flattens trailing axes; :class:`CNN` takes ``[B, H, W, C]`` (a channel axis
is added to ``[B, H, W]``) and ends in a dense layer. Both are float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "swish": nn.swish, "gelu": nn.gelu, "elu": nn.elu}


@dataclass
class NetworkConfig:
    """Network architecture (one per actor and one per critic: no shared torso)."""

    torso: str = "mlp"
    """'mlp' (flattened observation) or 'cnn' (observations [H, W, C] or [H, W])."""
    hidden_sizes: list[int] = field(default_factory=lambda: [64, 64])
    """Dense layer widths (MLP torso; after the convolutions for the CNN torso)."""
    activation: str = "tanh"
    """One of tanh, relu, swish, gelu, elu."""
    conv_features: list[int] = field(default_factory=lambda: [16, 32])
    """CNN torso: output channels of each 3x3 convolution (stride 1, SAME padding)."""


def validate_network(cfg: NetworkConfig, prefix: str = "agent.network") -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
    if cfg.torso not in ("mlp", "cnn"):
        raise ValueError(f"{prefix}.torso={cfg.torso!r}: allowed values are 'mlp', 'cnn'")
    if cfg.activation not in ACTIVATIONS:
        raise ValueError(
            f"{prefix}.activation={cfg.activation!r}: allowed values are {sorted(ACTIVATIONS)}"
        )
    if not cfg.hidden_sizes or any(int(h) < 1 for h in cfg.hidden_sizes):
        raise ValueError(
            f"{prefix}.hidden_sizes={list(cfg.hidden_sizes)}: need >= 1 layer, each >= 1"
        )
    if cfg.torso == "cnn" and (not cfg.conv_features or any(int(c) < 1 for c in cfg.conv_features)):
        raise ValueError(
            f"{prefix}.conv_features={list(cfg.conv_features)}: need >= 1 layer, each >= 1"
        )


class MLP(nn.Module):
    """Dense layers with orthogonal init (gain sqrt(2)); input flattened to ``[B, -1]``."""

    hidden_sizes: Sequence[int]
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x.reshape((x.shape[0], -1)).astype(jnp.float32)
        act = ACTIVATIONS[self.activation]
        for width in self.hidden_sizes:
            x = act(nn.Dense(width, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
        return x


class CNN(nn.Module):
    """3x3 convolutions then an MLP, for image or symbolic-grid observations."""

    conv_features: Sequence[int]
    hidden_sizes: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x.astype(jnp.float32)
        if x.ndim == 3:  # [B, H, W] -> [B, H, W, 1]
            x = x[..., None]
        act = ACTIVATIONS[self.activation]
        for features in self.conv_features:
            x = act(
                nn.Conv(
                    features,
                    (3, 3),
                    padding="SAME",
                    kernel_init=nn.initializers.orthogonal(np.sqrt(2)),
                )(x)
            )
        return MLP(self.hidden_sizes, self.activation)(x)


def make_torso(cfg: NetworkConfig) -> nn.Module:
    if cfg.torso == "cnn":
        return CNN(tuple(cfg.conv_features), tuple(cfg.hidden_sizes), cfg.activation)
    return MLP(tuple(cfg.hidden_sizes), cfg.activation)


class PolicyHead(nn.Module):
    """Torso + linear head: logits ``[B, n]`` (discrete) or mean ``[B, d]`` plus a
    state-independent ``log_std [d]`` (continuous). Small head init (gain 0.01)."""

    cfg: NetworkConfig
    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        h = make_torso(self.cfg)(obs)
        out = nn.Dense(self.action_dim, kernel_init=nn.initializers.orthogonal(0.01))(h)
        if not self.continuous:
            return out, None
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        return out, log_std


class ValueHead(nn.Module):
    """Torso + linear head: values ``[B]`` (gain 1.0)."""

    cfg: NetworkConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        h = make_torso(self.cfg)(obs)
        return nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(h)[:, 0]
