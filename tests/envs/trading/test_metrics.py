"""Equity-curve metrics: hand cases, NumPy == JAX (jit, batched), edge cases."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.envs.trading import metrics as M  # noqa: N812

pytestmark = pytest.mark.timeout(120)


def test_metrics__hand_case():
    curve = np.array([1.0, 1.1, 0.99, 1.2])
    r = np.array([0.1, -0.1, 1.2 / 0.99 - 1])
    m = M.summary(curve, 252)
    assert m["cumulative_return"] == pytest.approx(0.2)
    assert m["annualized_return"] == pytest.approx(1.2 ** (252 / 3) - 1)
    assert m["annualized_volatility"] == pytest.approx(np.std(r, ddof=1) * np.sqrt(252))
    assert m["sharpe"] == pytest.approx(r.mean() / np.std(r, ddof=1) * np.sqrt(252))
    assert m["sortino"] == pytest.approx(r.mean() / np.sqrt(0.01 / 3) * np.sqrt(252))
    assert m["max_drawdown"] == pytest.approx(0.1)  # 1.1 -> 0.99
    assert m["calmar"] == pytest.approx((1.2 ** (252 / 3) - 1) / 0.1)
    assert m["win_rate"] == pytest.approx(2 / 3) and m["loss_rate"] == pytest.approx(1 / 3)


def test_metrics__flat_noise_and_never_losing_curves():
    flat = M.summary(np.ones(10), 252)
    assert all(v == 0.0 for v in flat.values())
    # float32 rounding noise on a $1M portfolio is not a return.
    noisy = 1.0 + 1e-8 * np.array([0, 1, 0, 2, 1, 0, 1, 2, 1, 0], np.float64)
    assert all(abs(float(v)) < 1e-4 for v in M.summary(noisy, 252).values())
    up = M.summary(np.array([1.0, 1.01, 1.01, 1.03]), 252)
    assert up["sortino"] == np.inf and up["calmar"] == np.inf and up["max_drawdown"] == 0.0
    assert up["win_rate"] == pytest.approx(2 / 3) and up["loss_rate"] == 0.0
    with pytest.raises(ValueError, match="at least 2 points"):
        M.summary(np.ones(1), 252)


def test_metrics__jax_equals_numpy_batched_and_jitted():
    rng = np.random.default_rng(0)
    curves = np.cumprod(1.0 + 0.01 * rng.standard_normal((4, 60)), axis=1)
    curves = np.concatenate([np.ones((4, 1)), curves], axis=1)
    want = M.summary(curves, 8766.0)
    got = jax.jit(lambda c: M.summary(c, 8766.0, xp=jnp))(jnp.asarray(curves, jnp.float32))
    for k in M.NAMES:
        assert np.shape(got[k]) == (4,), k
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=2e-4, atol=1e-5, err_msg=k)
    # Batched rows are the single-curve values.
    one = M.summary(curves[2], 8766.0)
    for k in M.NAMES:
        assert want[k][2] == pytest.approx(one[k]), k
