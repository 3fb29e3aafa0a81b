"""The torsos' convolution (issue #12): on CPU it is a patches matmul that must compute what
``jax.lax.conv_general_dilated`` computes, forward and gradient, and it must leave no
``convolution`` op in a scanned update (the op XLA:CPU ran as a naive loop inside loops)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.agents import networks
from hordax.agents.networks import NetworkConfig, conv_general_dilated, make_torso

pytestmark = pytest.mark.timeout(300)

NHWC = ("NHWC", "HWIO", "NHWC")


def _lax(x, k, padding="SAME", strides=(1, 1)):
    return jax.lax.conv_general_dilated(x, k, strides, padding, dimension_numbers=NHWC)


def _ours(x, k, padding="SAME", strides=(1, 1)):
    return conv_general_dilated(x, k, strides, padding, dimension_numbers=NHWC)


@pytest.mark.parametrize(
    "x_shape, k_shape, padding",
    [
        ((5, 7, 7, 16), (3, 3, 16, 32), "SAME"),  # the grid torso's second layer
        ((3, 8, 6, 1), (3, 3, 1, 4), "SAME"),  # single-channel image, non-square
        ((2, 9, 9, 3), (5, 3, 3, 2), "VALID"),  # other kernel size and padding
        ((2, 6, 6, 2), (3, 3, 2, 3), ((2, 0), (1, 1))),  # explicit asymmetric padding
    ],
)
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


@pytest.mark.parametrize("torso", ["cnn", "grid"])
def test_torso__same_outputs_and_gradients_as_with_lax_conv(torso, monkeypatch):
    """The whole torso with hordax's convolution equals the torso built on lax's (same
    parameters): the fix changes how the network is computed, not what it computes."""
    cfg = NetworkConfig(torso=torso, conv_features=[8, 16], hidden_sizes=[32])
    obs = jax.random.randint(jax.random.key(3), (6, 7, 7, 2), 0, 12).astype(jnp.uint8)
    net = make_torso(cfg)
    params = net.init(jax.random.key(4), obs)
    loss = lambda p: jnp.sum(jnp.sin(net.apply(p, obs)))  # noqa: E731
    out, grads = net.apply(params, obs), jax.grad(loss)(params)
    monkeypatch.setattr(networks, "conv_general_dilated", jax.lax.conv_general_dilated)
    ref_out, ref_grads = net.apply(params, obs), jax.grad(loss)(params)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), grads, ref_grads
    )


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the patches path is CPU-only")
def test_torso__scanned_gradient_step_compiles_without_convolution_ops():
    """The regression guard: a gradient step inside ``lax.scan`` (as in every trainer's
    update) compiles to matmuls; XLA:CPU leaves the gradient convolutions of
    ``lax.conv_general_dilated`` un-canonicalized inside loops and runs them as naive loops.
    Also checks that the same program with lax's convolution does contain them (so the
    check can fail)."""
    net = make_torso(NetworkConfig(torso="grid", conv_features=[4], hidden_sizes=[8]))
    obs = jax.random.randint(jax.random.key(5), (4, 7, 7, 2), 0, 12).astype(jnp.uint8)
    params = net.init(jax.random.key(6), obs)

    def hlo() -> str:
        def train(p, obs):  # a new function each time (jit caches traces per function);
            # obs is an argument, so that XLA cannot fold the network into constants
            def step(p, _):
                g = jax.grad(lambda p: jnp.sum(net.apply(p, obs) ** 2))(p)
                return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g), None

            return jax.lax.scan(step, p, None, length=2)[0]

        return jax.jit(train).lower(params, obs).compile().as_text()

    assert "convolution(" not in hlo()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(networks, "conv_general_dilated", jax.lax.conv_general_dilated)
        assert "convolution(" in hlo()
