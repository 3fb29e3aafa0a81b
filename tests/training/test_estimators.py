"""GAE against a plain Python loop, with truncation and termination inside the rollout."""

import jax.numpy as jnp
import numpy as np
import pytest

from hordax.training.core.estimators import compute_gae


def gae_reference(reward, value, next_value, terminated, truncated, gamma, lam):
    """Textbook GAE, one env at a time, written as a loop over episodes' steps."""
    T, B = reward.shape
    adv = np.zeros((T, B))
    for b in range(B):
        running = 0.0
        for t in reversed(range(T)):
            bootstrap = 0.0 if terminated[t, b] else gamma * next_value[t, b]
            delta = reward[t, b] + bootstrap - value[t, b]
            if terminated[t, b] or truncated[t, b]:
                running = 0.0  # the next row belongs to a new episode
            running = delta + gamma * lam * running
            adv[t, b] = running
    return adv, adv + value


@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.9, 1.0), (1.0, 0.0)])
def test_gae__matches_python_loop_with_truncation_and_termination(gamma, lam):
    """Advantages and targets equal the loop on random data with both kinds of episode end."""
    rng = np.random.default_rng(0)
    T, B = 17, 5
    reward, value, next_value = (rng.normal(size=(T, B)).astype(np.float32) for _ in range(3))
    terminated = rng.random((T, B)) < 0.1
    truncated = (rng.random((T, B)) < 0.1) & ~terminated
    terminated[3, 0], truncated[7, 0], truncated[5, 1], terminated[5, 1] = True, True, True, True
    adv, target = compute_gae(
        jnp.asarray(reward),
        jnp.asarray(value),
        jnp.asarray(next_value),
        jnp.asarray(terminated),
        jnp.asarray(truncated),
        gamma,
        lam,
    )
    ref_adv, ref_target = gae_reference(
        reward, value, next_value, terminated, truncated, gamma, lam
    )
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(target, ref_target, rtol=1e-5, atol=1e-5)


def test_gae__truncation_bootstraps_and_termination_does_not():
    """A one-step episode: truncated -> r + gamma V(s'), terminated -> r."""
    one = jnp.ones((1, 1))
    adv_trunc, _ = compute_gae(one, 0 * one, 10 * one, one < 0, one > 0, 0.5, 0.9)
    adv_term, _ = compute_gae(one, 0 * one, 10 * one, one > 0, one < 0, 0.5, 0.9)
    assert float(adv_trunc[0, 0]) == pytest.approx(1 + 0.5 * 10)
    assert float(adv_term[0, 0]) == pytest.approx(1.0)
