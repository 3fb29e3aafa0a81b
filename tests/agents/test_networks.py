"""The torsos' CPU paths (issue #12) compute what the plain jax ops compute.

On CPU the convolutions run as a patches matmul (few output positions) or as canonical
NHWC/HWIO convolutions with a custom gradient; the grid torso's first layer (embedding +
2x2 convolution) takes its gradient from the codes, and with the max-pool after it, the
pool's masked gradient goes straight into the code tables; the max-pool alone is a reshape
with a mask gradient. Each must equal ``jax.lax.conv_general_dilated`` / ``jnp.take`` /
``flax.linen.max_pool`` in value and gradient, and a scanned update must contain only
canonical convolutions (the non-canonical ones are what XLA:CPU ran as naive loops inside
loops).
"""

import re

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.agents import networks
from hordax.agents.networks import (
    NetworkConfig,
    canonical_conv,
    conv_general_dilated,
    embed,
    embed_conv,
    embed_conv_pool,
    grid_conv_macs,
    make_torso,
    max_pool_2x2,
)

pytestmark = pytest.mark.timeout(300)

NHWC = ("NHWC", "HWIO", "NHWC")


def _lax(x, k, padding="SAME", strides=(1, 1)):
    return jax.lax.conv_general_dilated(x, k, strides, padding, dimension_numbers=NHWC)


def _ours(x, k, padding="SAME", strides=(1, 1)):
    return conv_general_dilated(x, k, strides, padding, dimension_numbers=NHWC)


@pytest.mark.parametrize(
    "x_shape, k_shape, padding",
    [
        ((5, 7, 7, 16), (3, 3, 16, 32), "SAME"),  # the cnn torso's second layer (canonical)
        ((3, 8, 6, 1), (3, 3, 1, 4), "SAME"),  # single-channel image, non-square
        ((4, 3, 3, 16), (2, 2, 16, 32), "VALID"),  # the grid torso's second layer (patches)
        ((4, 2, 2, 32), (2, 2, 32, 64), "VALID"),  # its third (1 position: patches)
        ((2, 9, 9, 3), (5, 3, 3, 2), "VALID"),  # other kernel size and padding
        ((2, 6, 6, 2), (3, 3, 2, 3), ((2, 0), (1, 1))),  # explicit asymmetric padding
    ],
)
@pytest.mark.slow
def test_conv__equals_lax_conv_forward_and_gradients(x_shape, k_shape, padding):
    kx, kk, kg = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(kx, x_shape)
    k = jax.random.normal(kk, k_shape)
    ref, vjp_ref = jax.vjp(lambda x, k: _lax(x, k, padding), x, k)
    out, vjp_out = jax.vjp(lambda x, k: _ours(x, k, padding), x, k)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    g = jax.random.normal(kg, ref.shape)
    for got, want in zip(vjp_out(g), vjp_ref(g), strict=True):  # d/dx and d/dkernel
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv__unsupported_cases_fall_back_to_lax():
    """Stride 2 is not the patches path's case: same result as lax (it takes lax's path)."""
    x = jax.random.normal(jax.random.key(1), (2, 8, 8, 3))
    k = jax.random.normal(jax.random.key(2), (3, 3, 3, 4))
    np.testing.assert_allclose(_ours(x, k, strides=(2, 2)), _lax(x, k, strides=(2, 2)), atol=1e-5)


@pytest.mark.parametrize(
    "x_shape, k_shape, padding",
    [
        ((3, 7, 7, 16), (2, 2, 16, 8), ((0, 0), (0, 0))),
        ((2, 6, 5, 3), (3, 2, 3, 4), ((2, 0), (1, 0))),
    ],
)
def test_canonical_conv__equals_lax_forward_and_gradients(x_shape, k_shape, padding):
    """The custom gradient (flipped-kernel d/dx, batch-as-feature d/dkernel) is lax's."""
    kx, kk, kg = jax.random.split(jax.random.key(7), 3)
    x, k = jax.random.normal(kx, x_shape), jax.random.normal(kk, k_shape)
    ref, vjp_ref = jax.vjp(lambda x, k: _lax(x, k, padding), x, k)
    out, vjp_out = jax.vjp(lambda x, k: canonical_conv(x, k, padding), x, k)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    g = jax.random.normal(kg, ref.shape)
    for got, want in zip(vjp_out(g), vjp_ref(g), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _embed_conv_ref(codes, tables, kernel):
    return _lax(embed(codes, tables), kernel, "VALID")


def _check_first_layer(fused, reference, codes, vocab, keys):
    """Random embedding tables ``[C, vocab, 4]`` and a 2x2 kernel to 8 features for ``codes``
    ``[B, H, W, C]`` (``keys``: tables, kernel, cotangent): ``fused(codes, tables, kernel)``
    under jit equals ``reference`` in value and in d/d(tables, kernel) for a random cotangent.
    Returns ``(tables, kernel, value)``."""
    k_tables, k_kernel, k_cot = keys
    c = codes.shape[-1]
    tables = jax.random.normal(k_tables, (c, vocab, 4))
    kernel = jax.random.normal(k_kernel, (2, 2, c * 4, 8))
    ref, vjp_ref = jax.vjp(lambda t, k: reference(codes, t, k), tables, kernel)
    out, vjp_out = jax.jit(lambda t, k: jax.vjp(lambda t, k: fused(codes, t, k), t, k))(
        tables, kernel
    )
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    g = jax.random.normal(k_cot, ref.shape)
    for got, want in zip(vjp_out(g), vjp_ref(g), strict=True):  # d/dtables, d/dkernel
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return tables, kernel, ref


@pytest.mark.parametrize("joint", [True, False])
@pytest.mark.parametrize("codes_shape, vocab", [((6, 7, 7, 2), 16), ((3, 5, 6, 3), 5)])
@pytest.mark.slow
def test_embed_conv__equals_embedding_then_lax_conv_with_gradients(
    codes_shape, vocab, joint, monkeypatch
):
    """The first grid layer: value and d/d(tables, kernel) of embed + lax conv (jitted),
    through joint codes (one row per cell) or, above ``JOINT_CODES_MAX``, per channel."""
    monkeypatch.setattr(networks, "JOINT_CODES_MAX", 4096 if joint else 0)
    k1, k2, k3, k4 = jax.random.split(jax.random.key(8), 4)
    codes = jax.random.randint(k1, codes_shape, 0, vocab)
    _check_first_layer(embed_conv, _embed_conv_ref, codes, vocab, (k2, k3, k4))


def _max_pool_ref(x):
    return nn.max_pool(x, (2, 2), strides=(2, 2), padding="VALID")


@pytest.mark.parametrize("shape", [(3, 6, 6, 4), (2, 7, 5, 3)])
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool__equals_flax_max_pool_and_its_gradient(shape, ties):
    """Odd sizes drop the last row/column (VALID). With ties (small integers: many windows
    hold their maximum twice or more) the gradient still goes to one input per window, the
    one reduce_window's gradient picks, so it is equal too."""
    x = jax.random.normal(jax.random.key(9), shape)
    if ties:
        x = jnp.round(x)
        b, h, w, c = shape
        windows = x[:, : h // 2 * 2, : w // 2 * 2].reshape((b, h // 2, 2, w // 2, 2, c))
        tied = jnp.sum(windows == _max_pool_ref(x)[:, :, None, :, None], axis=(2, 4)) > 1
        assert bool(jnp.any(tied))
    ref, vjp_ref = jax.vjp(_max_pool_ref, x)
    out, vjp_out = jax.vjp(max_pool_2x2, x)
    np.testing.assert_array_equal(out, ref)
    g = jax.random.normal(jax.random.key(10), ref.shape)
    np.testing.assert_allclose(vjp_out(g)[0], vjp_ref(g)[0], atol=1e-6)


def _embed_conv_pool_ref(codes, tables, kernel):
    return _max_pool_ref(_embed_conv_ref(codes, tables, kernel))


@pytest.mark.parametrize("joint", [True, False])
@pytest.mark.parametrize("codes_shape, vocab", [((6, 7, 7, 2), 3), ((3, 8, 7, 3), 5)])
@pytest.mark.slow
def test_embed_conv_pool__equals_embedding_lax_conv_and_flax_max_pool_with_gradients(
    codes_shape, vocab, joint, monkeypatch
):
    """The first grid layer fused with the max-pool (CPU: the pool's gradient goes straight
    into the code tables). Few codes, mostly one, as in real grids: identical neighbouring
    cells give tied window maxima, and the gradient must still go to the one member that
    reduce_window's picks (checked below). (8, 7) -> a 7x6 map: the odd row is dropped.
    Joint codes or per channel, as in the test above."""
    monkeypatch.setattr(networks, "JOINT_CODES_MAX", 4096 if joint else 0)
    k1, k2, k3, k4, k5 = jax.random.split(jax.random.key(11), 5)
    # mostly code 0 (floor, walls), as a grid view: many identical neighbouring patches
    codes = jax.random.randint(k1, codes_shape, 0, vocab)
    codes = jnp.where(jax.random.uniform(k5, codes_shape) < 0.8, 0, codes)
    tables, kernel, ref = _check_first_layer(
        embed_conv_pool, _embed_conv_pool_ref, codes, vocab, (k2, k3, k4)
    )
    conv = _embed_conv_ref(codes, tables, kernel)  # the case has tied window maxima
    b, h, w, f = conv.shape
    windows = conv[:, : h // 2 * 2, : w // 2 * 2].reshape((b, h // 2, 2, w // 2, 2, f))
    assert bool(jnp.any(jnp.sum(windows == ref[:, :, None, :, None], axis=(2, 4)) > 1))


@pytest.mark.parametrize("ties", [False, True])
def test_pool_then_bias_and_relu__equals_bias_relu_then_pool(ties):
    """The grid torso max-pools its first layer before adding the bias and the ReLU
    (rl-starter-files' order is conv, ReLU, pool): the same values and gradients."""
    x = jax.random.normal(jax.random.key(12), (4, 6, 6, 8))
    x = jnp.round(x) if ties else x
    bias = jax.random.normal(jax.random.key(13), (8,))
    g = jax.random.normal(jax.random.key(14), (4, 3, 3, 8))
    ref, vjp_ref = jax.vjp(lambda x, b: _max_pool_ref(nn.relu(x + b)), x, bias)
    out, vjp_out = jax.vjp(lambda x, b: nn.relu(_max_pool_ref(x) + b), x, bias)
    np.testing.assert_array_equal(out, ref)
    for got, want in zip(vjp_out(g), vjp_ref(g), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _reference_torso(monkeypatch):
    """Make the torsos use the plain jax ops (lax convolution, embedding + lax convolution,
    flax's max-pool)."""
    monkeypatch.setattr(networks, "conv_general_dilated", jax.lax.conv_general_dilated)
    monkeypatch.setattr(networks, "embed_conv", _embed_conv_ref)
    monkeypatch.setattr(networks, "max_pool_2x2", _max_pool_ref)
    monkeypatch.setattr(networks, "embed_conv_pool", _embed_conv_pool_ref)


@pytest.mark.parametrize(
    "torso, view, features",
    [("cnn", 7, [8, 16]), ("grid", 7, []), ("grid", 5, []), ("grid", 7, [8])],
)
@pytest.mark.slow
def test_torso__same_outputs_and_gradients_as_the_plain_jax_network(
    torso, view, features, monkeypatch
):
    """The whole torso with hordax's CPU paths equals the torso built on the plain ops
    (same parameters): the paths change how the network is computed, not what it computes.
    The grid torso's default (16, 32, 64) on a 7x7 view includes the max-pool; on 5x5 not."""
    cfg = NetworkConfig(torso=torso, conv_features=features, hidden_sizes=[32])
    obs = jax.random.randint(jax.random.key(3), (6, view, view, 2), 0, 12).astype(jnp.uint8)
    net = make_torso(cfg)
    params = net.init(jax.random.key(4), obs)
    loss = lambda p: jnp.sum(jnp.sin(net.apply(p, obs)))  # noqa: E731
    out, grads = net.apply(params, obs), jax.grad(loss)(params)
    _reference_torso(monkeypatch)
    ref_out, ref_grads = net.apply(params, obs), jax.grad(loss)(params)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), grads, ref_grads
    )


@pytest.mark.parametrize(
    "view, dense_in",
    [(7, 64), (5, 256)],  # 7: 6x6 -> pool 3x3 -> 2x2 -> 1x1; 5: 4 -> 3 -> 2
)
def test_grid_torso__shapes_dtypes_and_parameters(view, dense_in):
    cfg = NetworkConfig(torso="grid", hidden_sizes=[64, 64])
    net = make_torso(cfg)
    obs = jnp.zeros((3, view, view, 2), jnp.uint8)
    params = net.init(jax.random.key(0), obs)["params"]
    out = net.apply({"params": params}, obs)
    assert out.shape == (3, 64) and out.dtype == jnp.float32
    assert params["embed_0"].shape == params["embed_1"].shape == (16, 8)
    assert params["conv_0_kernel"].shape == (2, 2, 16, 16)
    assert params["Conv_0"]["kernel"].shape == (2, 2, 16, 32)
    assert params["Conv_1"]["kernel"].shape == (2, 2, 32, 64)
    assert params["MLP_0"]["Dense_0"]["kernel"].shape == (dense_in, 64)


def test_grid_torso__mac_count_and_too_small_views():
    assert grid_conv_macs((7, 7), 16, (16, 32, 64)) == 36_864 + 8_192 + 8_192
    assert grid_conv_macs((5, 5), 16, (16, 32, 64)) == 16 * 64 * 16 + 9 * 64 * 32 + 4 * 128 * 64
    net = make_torso(NetworkConfig(torso="grid", conv_features=[8, 8, 8, 8]))
    with pytest.raises(ValueError, match=r"conv_features=\[8, 8, 8, 8\]: a grid view of 7x7"):
        net.init(jax.random.key(0), jnp.zeros((1, 7, 7, 2), jnp.uint8))


def _scanned_grad_hlo(net, params, obs) -> str:
    def train(p, obs):  # a new function each time (jit caches traces per function);
        # obs is an argument, so that XLA cannot fold the network into constants
        def step(p, _):
            g = jax.grad(lambda p: jnp.sum(net.apply(p, obs) ** 2))(p)
            return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g), None

        return jax.lax.scan(step, p, None, length=2)[0]

    return jax.jit(train).lower(params, obs).compile().as_text()


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU paths are CPU-only")
@pytest.mark.parametrize("torso", ["cnn", "grid"])
def test_torso__scanned_gradient_step_has_only_canonical_convolutions(torso, monkeypatch):
    """The regression guard: a gradient step inside ``lax.scan`` (as in every trainer's
    update) compiles to matmuls and NHWC/HWIO convolutions only; XLA:CPU leaves the
    gradient convolutions of ``lax.conv_general_dilated`` (other dimension numbers)
    un-canonicalized inside loops and runs them as naive loops. Also checks that the plain
    network does contain such convolutions (so the check can fail)."""
    net = make_torso(NetworkConfig(torso=torso, conv_features=[4, 4], hidden_sizes=[8]))
    obs = jax.random.randint(jax.random.key(5), (4, 7, 7, 2), 0, 12).astype(jnp.uint8)
    params = net.init(jax.random.key(6), obs)
    labels = lambda hlo: set(re.findall(r"convolution\(.*dim_labels=([^,\s]+)", hlo))  # noqa: E731
    assert labels(_scanned_grad_hlo(net, params, obs)) <= {"b01f_01io->b01f"}
    _reference_torso(monkeypatch)
    assert labels(_scanned_grad_hlo(net, params, obs)) - {"b01f_01io->b01f"}
