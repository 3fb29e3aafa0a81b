"""Network torsos and heads shared by all agents (flax.linen).

Torsos map an observation batch ``[B, *obs_shape]`` to features ``f32[B, F]``:
:class:`MLP` flattens trailing axes; :class:`CNN` takes images ``[B, H, W, C]`` (a channel
axis is added to ``[B, H, W]``); :class:`GridTorso` takes integer symbolic grids (MiniGrid's
small 2x2 convolution network on per-channel embeddings). The heads put a linear policy
output and a linear value output on one torso each (:class:`PolicyHead`,
:class:`ValueHead`) or on one shared torso (:class:`ActorCriticHead`), optionally through a
GRU (the ``Recurrent*`` heads).

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
    """Network architecture: a torso, then a policy and a value output (see ``shared_torso``)."""

    torso: str = "mlp"
    """'mlp' (flattened observation), 'cnn' (images [H, W, C] or [H, W]: 3x3 convolutions)
    or 'grid' (symbolic grids: integer [H, W, C] codes, e.g. (tile, colour), embedded per
    channel, then MiniGrid's small 2x2 convolution stack; see :class:`GridTorso`)."""
    hidden_sizes: list[int] = field(default_factory=lambda: [64, 64])
    """Dense layer widths (MLP torso; after the convolutions for the cnn and grid torsos)."""
    activation: str = "tanh"
    """One of tanh, relu, swish, gelu, elu (dense layers; the grid torso's convolutions
    use relu, as its reference networks do)."""
    conv_features: list[int] = field(default_factory=list)
    """Output channels of each convolution; [] = the torso's default: cnn [16, 32] (3x3,
    SAME), grid [16, 32, 64] (2x2, VALID)."""
    embed_vocab: int = 16
    """grid torso: codes per channel (values are clipped into [0, embed_vocab - 1])."""
    embed_dim: int = 8
    """grid torso: embedding width per channel."""
    shared_torso: bool = False
    """One torso (and GRU) for the policy and the value, each with its own linear output
    (rl-starter-files' and XLand-MiniGrid's actor-critic): half the network cost per step.
    False: separate actor and critic networks (PureJaxRL's default)."""
    rnn_size: int = 0
    """GRU hidden size after the torso (recurrent policy and value); 0 = feed-forward."""


#: ``conv_features`` of each convolutional torso when the config leaves it empty.
DEFAULT_CONV_FEATURES = {"cnn": (16, 32), "grid": (16, 32, 64)}


def conv_features(cfg: NetworkConfig) -> tuple[int, ...]:
    """The convolution widths the torso ``cfg.torso`` uses (its default if none are set)."""
    return tuple(int(c) for c in cfg.conv_features) or DEFAULT_CONV_FEATURES.get(cfg.torso, ())


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
    if any(int(c) < 1 for c in cfg.conv_features):
        raise ValueError(
            f"{prefix}.conv_features={list(cfg.conv_features)}: each width must be >= 1 "
            "([] = the torso's default)"
        )


_NHWC = ("NHWC", "HWIO", "NHWC")
#: Convolutions whose input has at most this many positions run as one dense matmul on CPU
#: (:func:`_conv_as_dense`: the grid torso's layers after the max-pool); larger maps as
#: canonical convolutions (:func:`canonical_conv`).
DENSE_MAX_POSITIONS = 16


def _conv_as_dense(
    x: jax.Array, kernel: jax.Array, padding: Sequence[tuple[int, int]]
) -> jax.Array:
    """Stride-1 convolution ``x f32[B, H, W, C]``, ``kernel f32[kh, kw, C, O]`` ->
    ``f32[B, H', W', O]`` as one matmul ``x [B, H W C] @ M [H W C, H' W' O]``, where the
    convolution matrix ``M`` is built from the kernel through a constant 0/1 map of which
    kernel tap joins which input and output position. On a small map (3x3 -> 2x2) this costs
    ``H W / (kh kw)`` times the convolution's multiply-adds but runs as a dense layer does,
    forward and backward (its kernel gradient is contracted over the batch only, not over
    ``B x H' x W'`` rows of patches, the slow shape of matmul on CPU)."""
    kh, kw, c, o = kernel.shape
    (pt, pb), (pl, pr) = padding
    h, w = x.shape[1], x.shape[2]
    oh, ow = h + pt + pb - kh + 1, w + pl + pr - kw + 1
    taps = np.zeros((h * w, oh * ow, kh * kw), np.float32)
    for r in range(oh):
        for q in range(ow):
            for i in range(kh):
                for j in range(kw):
                    rr, qq = r + i - pt, q + j - pl
                    if 0 <= rr < h and 0 <= qq < w:
                        taps[rr * w + qq, r * ow + q, i * kw + j] = 1.0
    m = jnp.einsum("ipt,tco->icpo", taps, kernel.reshape((kh * kw, c, o)))
    y = x.reshape((x.shape[0], h * w * c)) @ m.reshape((h * w * c, oh * ow * o))
    return y.reshape((x.shape[0], oh, ow, o))


def _canonical(x: jax.Array, kernel: jax.Array, padding: Sequence[tuple[int, int]]) -> jax.Array:
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), padding, dimension_numbers=_NHWC)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def canonical_conv(
    x: jax.Array, kernel: jax.Array, padding: tuple[tuple[int, int], ...]
) -> jax.Array:
    """Stride-1 convolution ``x f32[B, H, W, C]``, ``kernel f32[kh, kw, C, O]`` ->
    ``f32[B, H', W', O]`` whose forward *and* gradients are NHWC/HWIO convolutions.

    XLA:CPU runs only that canonical form with its fast (Eigen) kernel; jax's own gradient
    convolutions have other dimension numbers, which XLA:CPU rewrites into canonical ones
    only outside loops. Here d/dx is the full correlation of the output gradient with the
    flipped, transposed kernel, and d/dkernel a convolution of the (transposed) input with
    the (transposed) output gradient in which the batch is the contracted feature axis: both
    canonical by construction. ``padding``: ``(low, high)`` per spatial axis, each at most
    ``k - 1`` (so that the d/dx padding is not negative).
    """
    return _canonical(x, kernel, padding)


def _canonical_conv_fwd(x, kernel, padding):
    return _canonical(x, kernel, padding), (x, kernel)


def _canonical_conv_bwd(padding, residuals, g):
    x, kernel = residuals
    kh, kw = kernel.shape[:2]
    flipped = jnp.flip(kernel, (0, 1)).transpose(0, 1, 3, 2)  # [kh, kw, O, C]
    (pt, pb), (pl, pr) = padding
    dx = _canonical(g, flipped, ((kh - 1 - pt, kh - 1 - pb), (kw - 1 - pl, kw - 1 - pr)))
    xp = jnp.pad(x, ((0, 0), *padding, (0, 0)))
    # [C, Hp, Wp, B] (*) [H', W', B, O] -> [C, kh, kw, O]: B is contracted as the feature axis
    dk = _canonical(xp.transpose(3, 1, 2, 0), g.transpose(1, 2, 0, 3), ((0, 0), (0, 0)))
    return dx, dk.transpose(1, 2, 0, 3)


canonical_conv.defvjp(_canonical_conv_fwd, _canonical_conv_bwd)


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
    convolutions the torsos use (2-D, NHWC/HWIO, stride 1, no dilation, one group, padding
    in ``[0, k - 1]``, default precision) on CPU as one dense matmul when the input has at
    most :data:`DENSE_MAX_POSITIONS` positions, else with :func:`canonical_conv`; every
    other case and every other platform goes to ``lax.conv_general_dilated`` unchanged.
    Passed to ``nn.Conv``."""
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
        and all(0 <= int(p) < k for pair, k in zip(pads, rhs.shape[:2], strict=True) for p in pair)
        and precision is None
    ):
        return lax_conv(lhs, rhs)
    pads = tuple(tuple(int(p) for p in pair) for pair in pads)
    if lhs.shape[1] * lhs.shape[2] <= DENSE_MAX_POSITIONS:
        cpu = lambda x, k: _conv_as_dense(x, k, pads)  # noqa: E731
    else:
        cpu = lambda x, k: canonical_conv(x, k, pads)  # noqa: E731
    return jax.lax.platform_dependent(lhs, rhs, cpu=cpu, default=lax_conv)


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
    """3x3 stride-1 SAME convolutions (``conv_features`` channels, ``activation``) then an
    MLP, for image observations ``[B, H, W, C]`` (or ``[B, H, W]``)."""

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
            x = act(_conv(features, (3, 3), "SAME")(x))
        return MLP(self.hidden_sizes, self.activation)(x)


def _conv(features: int, kernel: tuple[int, int], padding: str) -> nn.Conv:
    """A stride-1 convolution (orthogonal init, gain sqrt(2)) on hordax's convolution."""
    return nn.Conv(
        features,
        kernel,
        padding=padding,
        kernel_init=nn.initializers.orthogonal(np.sqrt(2)),
        conv_general_dilated=conv_general_dilated,
    )


def _pair_max(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``x [..., 2, n]`` -> ``(max over the pair [..., n], first, second)``."""
    first, second = x[..., 0, :], x[..., 1, :]
    return jnp.maximum(first, second), first, second


@jax.custom_vjp
def max_pool_2x2(x: jax.Array) -> jax.Array:
    """2x2 max-pool, stride 2, VALID: ``f32[B, H, W, C] -> f32[B, H // 2, W // 2, C]``.

    Two maxima of contiguous halves (over column pairs, then row pairs), which vectorize
    along the channels on a CPU. Its gradient goes to one input per window, the first
    maximum in row-major order, as ``lax.reduce_window``'s (``select_and_scatter`` with
    ``>=``) does, but as two masks instead of that op's slow CPU path. Ties are common
    (identical neighbouring cells give identical convolution outputs), so the gradient
    must not go to every tied input: that would count one path twice."""
    return _max_pool_parts(x)[0]


def _max_pool_parts(x: jax.Array) -> tuple:
    b, h, w, c = x.shape
    hp, wp = h // 2, w // 2
    x = x[:, : 2 * hp, : 2 * wp]
    cols, left, right = _pair_max(x.reshape((b, 2 * hp, wp, 2, c)))  # [B, 2hp, wp, C]
    y, top, bottom = _pair_max(cols.reshape((b, hp, 2, wp * c)))  # [B, hp, wp C]
    return y.reshape((b, hp, wp, c)), (left, right, top, bottom)


def _max_pool_fwd(x):
    y, parts = _max_pool_parts(x)
    return y, (x.shape, parts)


def _max_pool_bwd(residuals, g):
    (b, h, w, c), (left, right, top, bottom) = residuals
    hp, wp = h // 2, w // 2
    g = g.reshape((b, hp, wp * c))
    first = top >= bottom  # the top row holds the first maximum
    g_rows = jnp.stack([jnp.where(first, g, 0.0), jnp.where(first, 0.0, g)], axis=2)
    g_rows = g_rows.reshape((b, 2 * hp, wp, c))
    first = left >= right
    dx = jnp.stack([jnp.where(first, g_rows, 0.0), jnp.where(first, 0.0, g_rows)], axis=3)
    dx = dx.reshape((b, 2 * hp, 2 * wp, c))
    return (jnp.pad(dx, ((0, 0), (0, h - 2 * hp), (0, w - 2 * wp), (0, 0))),)


max_pool_2x2.defvjp(_max_pool_fwd, _max_pool_bwd)


def embed(codes: jax.Array, tables: jax.Array) -> jax.Array:
    """Per-channel embedding: ``codes int32[B, H, W, C]`` (in ``[0, V)``), ``tables
    f32[C, V, D]`` -> ``f32[B, H, W, C * D]`` (channel ``c``'s vectors at ``c * D``)."""
    return jnp.concatenate([tables[c][codes[..., c]] for c in range(codes.shape[-1])], axis=-1)


def _embed_conv_lax(codes: jax.Array, tables: jax.Array, kernel: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(
        embed(codes, tables), kernel, (1, 1), "VALID", dimension_numbers=_NHWC
    )


#: The CPU paths of the first grid layer use all channels' joint codes (one embedding row
#: and, in the gradient, one scattered row per cell instead of one per channel) when there
#: are at most this many (``V ** C``); else one per channel.
JOINT_CODES_MAX = 4096


def _joint(per_channel: Sequence[jax.Array], vocab: int) -> jax.Array:
    """The joint code ``sum_c v_c V^(C-1-c)`` of per-channel codes (each in ``[0, V)``)."""
    C = len(per_channel)
    return sum(v * vocab ** (C - 1 - c) for c, v in enumerate(per_channel))


def _embed_conv_value(codes: jax.Array, tables: jax.Array, kernel: jax.Array) -> jax.Array:
    """``_embed_conv_lax``'s value on CPU: with few joint codes, the embedding is one gather
    of ``[V ** C, C * D]`` rows (each the concatenation of the channels' rows, so exactly
    ``embed``'s result) instead of ``C`` gathers and a concatenation."""
    C, V, D = tables.shape
    if V**C > JOINT_CODES_MAX:
        return _embed_conv_lax(codes, tables, kernel)
    joint_rows = jnp.concatenate(
        [
            jnp.broadcast_to(
                tables[c].reshape((1,) * c + (V,) + (1,) * (C - 1 - c) + (D,)), (V,) * C + (D,)
            )
            for c in range(C)
        ],
        axis=-1,
    ).reshape((V**C, C * D))
    x = joint_rows[_joint([codes[..., c] for c in range(C)], V)]
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), "VALID", dimension_numbers=_NHWC)


_embed_conv_cpu = jax.custom_vjp(_embed_conv_value)


def _embed_conv_fwd(codes, tables, kernel):
    return _embed_conv_value(codes, tables, kernel), (codes, tables, kernel)


def _embed_conv_bwd(residuals, g):
    codes, tables, kernel = residuals
    kh, kw = kernel.shape[:2]
    h, w = g.shape[1:3]
    # d/dT[i, j, c, v] = sum of g over the output positions whose input cell (+i, +j) holds
    # code v in channel c: a scatter-add of g's rows into a [V, F] table per (i, j, c)
    cells = lambda i, j, c: [codes[:, i : i + h, j : j + w, c]]  # noqa: E731
    return None, *_table_grads(cells, g[None], tables, kernel)


def _table_grads(cells, grads, tables, kernel):
    """``(d/dtables, d/dkernel)`` of the first grid layer from its output gradients:
    ``grads f32[K, B, h, w, F]`` are ``K`` blocks of output positions, ``cells(i, j, c)`` a
    list of the ``K`` blocks' codes ``int[B, h, w]`` under kernel tap ``(i, j)`` (channel
    ``c``). The rows are scatter-added into a ``[V, F]`` table per ``(i, j, c)``, ``d/dT``,
    from which both gradients are small contractions. With few joint codes (``V ** C`` at
    most :data:`JOINT_CODES_MAX`) one scatter per tap goes into a table of joint codes
    ``(v_0, ..., v_{C-1})``, whose sums over the other channels are the per-channel tables:
    ``C`` times fewer scattered rows, the slow part of this gradient on a CPU."""
    kh, kw = kernel.shape[:2]
    (C, V, D), F = tables.shape, kernel.shape[-1]
    rows = grads.reshape((-1, F))
    codes = lambda i, j, c: jnp.stack(cells(i, j, c)).reshape(-1)  # noqa: E731
    per_tap = []
    for i in range(kh):
        for j in range(kw):
            if V**C <= JOINT_CODES_MAX:
                joint = _joint([codes(i, j, c) for c in range(C)], V)
                t = jnp.zeros((V**C, F), rows.dtype).at[joint].add(rows)
                t = t.reshape((V,) * C + (F,))
                others = lambda c: tuple(a for a in range(C) if a != c)  # noqa: E731
                per_tap.append(jnp.stack([t.sum(axis=others(c)) for c in range(C)]))
            else:
                zero = jnp.zeros((V, F), rows.dtype)
                per_tap.append(jnp.stack([zero.at[codes(i, j, c)].add(rows) for c in range(C)]))
    d_table = jnp.stack(per_tap).reshape((kh, kw, C, V, F))
    k = kernel.reshape((kh, kw, C, D, F))
    d_tables = jnp.einsum("ijcvf,ijcdf->cvd", d_table, k)
    d_kernel = jnp.einsum("cvd,ijcvf->ijcdf", tables, d_table).reshape(kernel.shape)
    return d_tables, d_kernel


_embed_conv_cpu.defvjp(_embed_conv_fwd, _embed_conv_bwd)


def embed_conv(codes: jax.Array, tables: jax.Array, kernel: jax.Array) -> jax.Array:
    """A VALID stride-1 convolution of the per-channel embedding of integer codes:
    ``codes int32[B, H, W, C]`` (in ``[0, V)``), ``tables f32[C, V, D]``, ``kernel
    f32[kh, kw, C * D, F]`` -> ``f32[B, H - kh + 1, W - kw + 1, F]``; the same function and
    gradients as ``lax.conv_general_dilated(embed(codes, tables), kernel)``.

    On CPU the gradient is computed from the codes: the layer is linear in
    ``T[i, j, c, v] = tables[c, v] @ kernel[i, j, c]``, and ``d/dT`` is a scatter-add of the
    output gradient over the codes (``kh * kw * C`` tables of ``V x F``), from which
    ``d/dtables`` and ``d/dkernel`` are two small contractions. That replaces the gradient
    convolutions (d/dinput, d/dkernel over ``B x H' x W'`` positions) and the embedding's own
    scatter: on a 2-core CPU the first grid layer's forward and backward took about a
    quarter of the time (``benchmarks/RESULTS.md``). Other platforms differentiate
    ``embed`` and ``lax.conv_general_dilated`` as usual.
    """
    return jax.lax.platform_dependent(
        codes, tables, kernel, cpu=_embed_conv_cpu, default=_embed_conv_lax
    )


def _pool_windows(y: jax.Array) -> list[jax.Array]:
    """The four members of each 2x2 window of ``y [B, H, W, F]`` (VALID: an odd last row or
    column is dropped), in row-major order: four strided slices ``[B, H // 2, W // 2, F]``."""
    hp, wp = y.shape[1] // 2, y.shape[2] // 2
    return [y[:, a : 2 * hp : 2, b : 2 * wp : 2] for a in (0, 1) for b in (0, 1)]


def _embed_conv_pool_lax(codes: jax.Array, tables: jax.Array, kernel: jax.Array) -> jax.Array:
    return max_pool_2x2(_embed_conv_lax(codes, tables, kernel))


def _embed_conv_pool_fwd(codes, tables, kernel):
    m = _pool_windows(_embed_conv_value(codes, tables, kernel))
    y = jnp.maximum(jnp.maximum(m[0], m[1]), jnp.maximum(m[2], m[3]))
    # the window member that receives the gradient: the first maximum (reduce_window's)
    first = jnp.where(m[0] == y, 0, jnp.where(m[1] == y, 1, jnp.where(m[2] == y, 2, 3)))
    return y, (codes, tables, kernel, first.astype(jnp.int8))


def _embed_conv_pool_bwd(residuals, g):
    codes, tables, kernel, first = residuals
    hp, wp = g.shape[1:3]
    # each window member k = (a, b) is a block of output positions (2r + a, 2q + b); its
    # gradient is g where it holds the window's first maximum, and the codes under its tap
    # (i, j) are the strided cells (2r + a + i, 2q + b + j)
    # [4, B, hp, wp, F], computed on rows: one flat pass (the 5-d broadcast was slower)
    b, F = g.shape[0], g.shape[-1]
    k = jnp.arange(4, dtype=first.dtype).reshape((4, 1, 1))
    rows, first = g.reshape((1, -1, F)), first.reshape((1, -1, F))
    grads = jnp.where(first == k, rows, 0.0).reshape((4, b, hp, wp, F))
    members = [(a, b) for a in (0, 1) for b in (0, 1)]

    def cells(i, j, c):
        return [
            codes[:, a + i : a + i + 2 * hp - 1 : 2, b + j : b + j + 2 * wp - 1 : 2, c]
            for a, b in members
        ]

    return None, *_table_grads(cells, grads, tables, kernel)


_embed_conv_pool_cpu = jax.custom_vjp(
    lambda codes, tables, kernel: max_pool_2x2(_embed_conv_value(codes, tables, kernel))
)
_embed_conv_pool_cpu.defvjp(_embed_conv_pool_fwd, _embed_conv_pool_bwd)


def embed_conv_pool(codes: jax.Array, tables: jax.Array, kernel: jax.Array) -> jax.Array:
    """``max_pool_2x2(embed_conv(codes, tables, kernel))``, same function and gradients:
    ``codes int32[B, H, W, C]`` -> ``f32[B, (H - kh + 1) // 2, (W - kw + 1) // 2, F]``.

    On CPU the pool's gradient never goes back to the ``[B, H', W', F]`` map: each of the
    four window members is a block of output positions with its own strided cells of codes,
    so its masked gradient is scatter-added into the tables of :func:`embed_conv`'s
    gradient directly. That drops the map-sized mask, stack and reshape passes of the
    pool's own backward, which took about a quarter of a PPO update with the grid torso on
    a 2-core CPU (``benchmarks/RESULTS.md``). Other platforms: ``max_pool_2x2`` of
    ``embed_conv``'s plain path."""
    return jax.lax.platform_dependent(
        codes, tables, kernel, cpu=_embed_conv_pool_cpu, default=_embed_conv_pool_lax
    )


def grid_conv_macs(view: tuple[int, int], channels: int, features: Sequence[int]) -> int:
    """Multiply-adds per observation of :class:`GridTorso`'s convolutions on a ``view``
    ``(H, W)`` of ``channels`` embedded channels (the dense layers not counted)."""
    (h, w), c, macs = view, channels, 0
    for i, f in enumerate(features):
        h, w = h - 1, w - 1
        macs += h * w * 4 * c * f
        c = f
        if i == 0 and _pools(h, w, len(features)):
            h, w = h // 2, w // 2
    return macs


def _pools(h: int, w: int, num_convs: int) -> bool:
    """Whether the first convolution's ``h x w`` output is max-pooled: when it is at least
    6x6 (a 7x7 view, rl-starter-files' network) and more convolutions follow."""
    return num_convs > 1 and min(h, w) >= 6


class GridTorso(nn.Module):
    """MiniGrid's small actor-critic encoder for symbolic grids ``int[B, H, W, C]``.

    Each channel's codes (tile, colour, ...) are embedded (``dim`` floats, codes clipped
    into ``[0, vocab)``), then 2x2 VALID convolutions with ReLU (``conv_features``, default
    16, 32, 64), a 2x2 max-pool after the first one when its output is at least 6x6, and the
    MLP (``hidden_sizes``, ``activation``) on the flattened result. This is the network of
    rl-starter-files / torch-ac (``ACModel``: 2x2 convs 16-32-64, a max-pool after the first,
    used for MiniGrid's DoorKey and FourRooms) with XLand-MiniGrid's per-channel embeddings
    (its baseline ``training/nn.py``: ``nn.Embed`` of tile and colour, then 2x2 convs 16-32-64,
    no pool on its 5x5 views). On a 7x7 view with 2 channels and ``dim`` 8 the convolutions
    are 7x7x16 -> 6x6x16 -> pool 3x3x16 -> 2x2x32 -> 1x1x64: 53,248 multiply-adds per
    observation (:func:`grid_conv_macs`), and its flattened output is 64 wide; the 3x3 SAME
    16-32 stack this torso used before took 338,688 and fed a 1,568-wide dense layer.
    """

    vocab: int
    dim: int
    conv_features: Sequence[int]
    hidden_sizes: Sequence[int]
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        codes = jnp.clip(jnp.asarray(x).astype(jnp.int32), 0, self.vocab - 1)
        if codes.ndim == 3:  # [B, H, W] -> [B, H, W, 1]
            codes = codes[..., None]
        C = codes.shape[-1]
        features = tuple(self.conv_features)
        if min(codes.shape[1:3]) < len(features) + 1:
            raise ValueError(
                f"agent.network.conv_features={list(features)}: a grid view of "
                f"{codes.shape[1]}x{codes.shape[2]} is too small for {len(features)} 2x2 "
                "convolutions; use fewer"
            )
        init = nn.initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)
        tables = jnp.stack(
            [self.param(f"embed_{c}", init, (self.vocab, self.dim)) for c in range(C)]
        )
        kernel = self.param(
            "conv_0_kernel",
            nn.initializers.orthogonal(np.sqrt(2)),
            (2, 2, C * self.dim, features[0]),
        )
        bias = self.param("conv_0_bias", nn.initializers.zeros, (features[0],))
        h, w = codes.shape[1] - 1, codes.shape[2] - 1
        if _pools(h, w, len(features)):
            # max-pool before the bias and ReLU: the same values (both are monotone; max(x)
            # + b equals max(x + b) in floats too), one map-sized pass fewer
            x = nn.relu(embed_conv_pool(codes, tables, kernel) + bias)
        else:
            x = nn.relu(embed_conv(codes, tables, kernel) + bias)
        for width in features[1:]:
            if min(x.shape[1:3]) < 2:
                raise ValueError(
                    f"agent.network.conv_features={list(features)}: a grid view of "
                    f"{codes.shape[1]}x{codes.shape[2]} is too small for {len(features)} 2x2 "
                    "convolutions after the max-pool; use fewer"
                )
            x = nn.relu(_conv(width, (2, 2), "VALID")(x))
        return MLP(self.hidden_sizes, self.activation)(x)


def make_torso(cfg: NetworkConfig) -> nn.Module:
    if cfg.torso == "cnn":
        return CNN(conv_features(cfg), tuple(cfg.hidden_sizes), cfg.activation)
    if cfg.torso == "grid":
        return GridTorso(
            int(cfg.embed_vocab),
            int(cfg.embed_dim),
            conv_features(cfg),
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


class ActorCriticHead(nn.Module):
    """One torso, two linear outputs (``shared_torso``):
    ``obs [B, ...] -> ((logits or mean [B, n], log_std), value [B])``."""

    cfg: NetworkConfig
    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, obs: jax.Array):
        h = make_torso(self.cfg)(obs)
        return _ActionOut(self.action_dim, self.continuous)(h), _value_out(h)


class RecurrentActorCriticHead(nn.Module):
    """One torso and one :class:`ResetGRU`, two linear outputs (``shared_torso``):
    ``(obs [T, B, ...], resets, carry [B, H]) -> ((out [T, B, n], log_std), value [T, B],
    carry)``."""

    cfg: NetworkConfig
    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, obs: jax.Array, resets: jax.Array, carry: jax.Array):
        carry, h = ResetGRU(self.cfg.rnn_size)(carry, _torso_over_time(self.cfg, obs), resets)
        return _ActionOut(self.action_dim, self.continuous)(h), _value_out(h), carry
