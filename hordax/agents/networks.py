"""Network torsos and heads shared by all agents (flax.linen).

Torsos map an observation batch ``[B, *obs_shape]`` to features ``[B, F]``:
:class:`MLP` flattens trailing axes; :class:`CNN` takes ``[B, H, W, C]`` (a channel axis
is added to ``[B, H, W]``) and ends in a dense layer. Both are float32.

On CPU the CNN's convolutions run as one matmul of image patches (:func:`conv_general_dilated`):
XLA:CPU sends a convolution to its fast (Eigen) kernel only when its dimension numbers are
canonical (NHWC input, HWIO kernel), and it rewrites the non-canonical ones, which is what
the gradient convolutions are, only in a program's top-level computation. Inside
``lax.scan`` (every trainer's update loop) they fell back to a naive loop, 20-50x slower per
gradient, which made PPO with a CNN torso train ~300x slower than with an MLP (issue #12).
A matmul and its gradients (matmuls) take the fast path everywhere, under ``vmap`` too.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from hordax.validation import need

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "swish": nn.swish, "gelu": nn.gelu, "elu": nn.elu}


@dataclass
class NetworkConfig:
    """Network architecture (one per actor and one per critic: no shared torso)."""

    torso: str = "mlp"
    """'mlp' (flattened observation), 'cnn' (observations [H, W, C] or [H, W]) or 'grid'
    (symbolic grids: integer [H, W, C] codes, e.g. (tile, colour), embedded per channel,
    then the CNN)."""
    hidden_sizes: list[int] = field(default_factory=lambda: [64, 64])
    """Dense layer widths (MLP torso; after the convolutions for the CNN torso)."""
    activation: str = "tanh"
    """One of tanh, relu, swish, gelu, elu."""
    conv_features: list[int] = field(default_factory=lambda: [16, 32])
    """CNN torso: output channels of each 3x3 convolution (stride 1, SAME padding)."""
    embed_vocab: int = 16
    """grid torso: codes per channel (values are clipped into [0, embed_vocab - 1])."""
    embed_dim: int = 8
    """grid torso: embedding width per channel."""
    rnn_size: int = 0
    """GRU hidden size after the torso (recurrent policy and value); 0 = feed-forward."""


def validate_layers(hidden_sizes: Sequence[int], activation: str, prefix: str) -> None:
    """The checks of an MLP's widths and activation (every agent's networks): ``ValueError``
    naming ``<prefix>hidden_sizes`` or ``<prefix>activation``."""
    need(
        bool(hidden_sizes) and all(int(h) >= 1 for h in hidden_sizes),
        f"{prefix}hidden_sizes",
        list(hidden_sizes),
        "need >= 1 layer, each >= 1",
    )
    need(
        activation in ACTIVATIONS,
        f"{prefix}activation",
        repr(activation),
        f"allowed values are {sorted(ACTIVATIONS)}",
    )


def validate_network(cfg: NetworkConfig, prefix: str = "agent.network") -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
    if cfg.torso not in ("mlp", "cnn", "grid"):
        raise ValueError(f"{prefix}.torso={cfg.torso!r}: allowed values are 'mlp', 'cnn', 'grid'")
    validate_layers(cfg.hidden_sizes, cfg.activation, f"{prefix}.")
    for key in ("embed_vocab", "embed_dim"):
        if int(getattr(cfg, key)) < 1:
            raise ValueError(f"{prefix}.{key}={getattr(cfg, key)}: must be an integer >= 1")
    if int(cfg.rnn_size) < 0:
        raise ValueError(f"{prefix}.rnn_size={cfg.rnn_size}: must be an integer >= 0 (0 = none)")
    if cfg.torso in ("cnn", "grid") and (
        not cfg.conv_features or any(int(c) < 1 for c in cfg.conv_features)
    ):
        raise ValueError(
            f"{prefix}.conv_features={list(cfg.conv_features)}: need >= 1 layer, each >= 1"
        )


def _conv_patches_matmul(
    x: jax.Array, kernel: jax.Array, padding: Sequence[tuple[int, int]], precision: Any
) -> jax.Array:
    """Stride-1 convolution ``x f32[B, H, W, C]``, ``kernel f32[kh, kw, C, O]`` ->
    ``f32[B, H', W', O]`` as ``patches [B, H', W', kh * kw * C] @ kernel [kh * kw * C, O]``
    (the patch's ``(i, j, c)`` order is the kernel's row-major flattening)."""
    kh, kw, c, o = kernel.shape
    xp = jnp.pad(x, ((0, 0), *padding, (0, 0)))
    h, w = xp.shape[1] - kh + 1, xp.shape[2] - kw + 1
    patches = jnp.concatenate(
        [xp[:, i : i + h, j : j + w, :] for i in range(kh) for j in range(kw)], axis=-1
    )
    return jnp.dot(patches, kernel.reshape((kh * kw * c, o)), precision=precision)


def conv_general_dilated(
    lhs: jax.Array,
    rhs: jax.Array,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    precision: Any = None,
) -> jax.Array:
    """``jax.lax.conv_general_dilated`` (same signature and result) that computes the
    convolutions the CNN torso uses (2-D, NHWC/HWIO, stride 1, no dilation, one group,
    non-negative padding) as a patches matmul on CPU; every other case and every other
    platform goes to ``lax.conv_general_dilated`` unchanged. Passed to ``nn.Conv``."""
    lax_conv = functools.partial(
        jax.lax.conv_general_dilated,
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dimension_numbers,
        feature_group_count=feature_group_count,
        precision=precision,
    )
    if lhs.ndim != 4 or rhs.ndim != 4:
        return lax_conv(lhs, rhs)
    dn = jax.lax.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    pads = (
        jax.lax.padtype_to_pads(lhs.shape[1:3], rhs.shape[:2], (1, 1), padding)
        if isinstance(padding, str)
        else [tuple(p) for p in padding]
    )
    unit = lambda v: v is None or all(int(d) == 1 for d in v)  # noqa: E731
    if not (
        dn == jax.lax.conv_dimension_numbers(lhs.shape, rhs.shape, ("NHWC", "HWIO", "NHWC"))
        and unit(window_strides)
        and unit(lhs_dilation)
        and unit(rhs_dilation)
        and feature_group_count == 1
        and all(int(p) >= 0 for pair in pads for p in pair)
    ):
        return lax_conv(lhs, rhs)
    return jax.lax.platform_dependent(
        lhs,
        rhs,
        cpu=lambda x, k: _conv_patches_matmul(x, k, pads, precision),
        default=lax_conv,
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
                    conv_general_dilated=conv_general_dilated,
                )(x)
            )
        return MLP(self.hidden_sizes, self.activation)(x)


class GridEmbed(nn.Module):
    """Symbolic grid ``int[B, H, W, C]`` -> per-channel embeddings ``f32[B, H, W, C * dim]``
    -> the :class:`CNN`. Codes outside ``[0, vocab)`` are clipped into it."""

    vocab: int
    dim: int
    conv_features: Sequence[int]
    hidden_sizes: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        codes = jnp.clip(jnp.asarray(x).astype(jnp.int32), 0, self.vocab - 1)
        if codes.ndim == 3:  # [B, H, W] -> [B, H, W, 1]
            codes = codes[..., None]
        embedded = [
            nn.Embed(self.vocab, self.dim, name=f"embed_{c}")(codes[..., c])
            for c in range(codes.shape[-1])
        ]
        return CNN(self.conv_features, self.hidden_sizes, self.activation)(
            jnp.concatenate(embedded, axis=-1)
        )


def make_torso(cfg: NetworkConfig) -> nn.Module:
    if cfg.torso == "cnn":
        return CNN(tuple(cfg.conv_features), tuple(cfg.hidden_sizes), cfg.activation)
    if cfg.torso == "grid":
        return GridEmbed(
            int(cfg.embed_vocab),
            int(cfg.embed_dim),
            tuple(cfg.conv_features),
            tuple(cfg.hidden_sizes),
            cfg.activation,
        )
    return MLP(tuple(cfg.hidden_sizes), cfg.activation)


class ResetGRU(nn.Module):
    """A GRU over time whose carry is zeroed where ``resets`` is True (episode starts).

    ``carry f32[B, H]``, ``xs f32[T, B, F]``, ``resets bool[T, B]`` ->
    ``(carry after the last step [B, H], outputs f32[T, B, H])``.
    """

    features: int

    @nn.compact
    def __call__(self, carry: jax.Array, xs: jax.Array, resets: jax.Array):
        def step(cell: nn.Module, c: jax.Array, inputs: tuple) -> tuple:
            x, reset = inputs
            c = jnp.where(reset[:, None], jnp.zeros_like(c), c)
            return cell(c, x)

        scan = nn.scan(
            step, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0
        )
        return scan(nn.GRUCell(self.features), carry, (xs, resets))


class _ActionOut(nn.Module):
    """Logits ``[..., n]`` (discrete) or mean ``[..., d]`` plus a state-independent
    ``log_std [d]`` (continuous); small init (gain 0.01)."""

    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, h: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        out = nn.Dense(self.action_dim, kernel_init=nn.initializers.orthogonal(0.01))(h)
        if not self.continuous:
            return out, None
        return out, self.param("log_std", nn.initializers.zeros, (self.action_dim,))


def _value_out(h: jax.Array) -> jax.Array:
    return nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(h)[..., 0]


class PolicyHead(nn.Module):
    """Torso + :class:`_ActionOut`: ``obs [B, ...] -> (logits or mean [B, n], log_std)``."""

    cfg: NetworkConfig
    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        return _ActionOut(self.action_dim, self.continuous)(make_torso(self.cfg)(obs))


class ValueHead(nn.Module):
    """Torso + linear head: values ``[B]`` (gain 1.0)."""

    cfg: NetworkConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return _value_out(make_torso(self.cfg)(obs))


def _torso_over_time(cfg: NetworkConfig, obs: jax.Array) -> jax.Array:
    """The torso on ``[T, B, ...]`` observations -> features ``[T, B, F]``."""
    T, B = obs.shape[:2]
    return make_torso(cfg)(obs.reshape((T * B, *obs.shape[2:]))).reshape((T, B, -1))


class RecurrentPolicyHead(nn.Module):
    """Torso -> :class:`ResetGRU` -> :class:`_ActionOut` over sequences.

    ``(obs [T, B, ...], resets bool[T, B], carry [B, H]) -> ((out [T, B, n], log_std), carry)``.
    """

    cfg: NetworkConfig
    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, obs: jax.Array, resets: jax.Array, carry: jax.Array):
        carry, h = ResetGRU(self.cfg.rnn_size)(carry, _torso_over_time(self.cfg, obs), resets)
        return _ActionOut(self.action_dim, self.continuous)(h), carry


class RecurrentValueHead(nn.Module):
    """Torso -> :class:`ResetGRU` -> value: ``(obs, resets, carry) -> (f32[T, B], carry)``."""

    cfg: NetworkConfig

    @nn.compact
    def __call__(self, obs: jax.Array, resets: jax.Array, carry: jax.Array):
        carry, h = ResetGRU(self.cfg.rnn_size)(carry, _torso_over_time(self.cfg, obs), resets)
        return _value_out(h), carry
