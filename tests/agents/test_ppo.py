"""PPO math: distributions, the clipped loss, torsos, and that an update moves the policy."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

from hordax.agents import distributions as dist
from hordax.agents.networks import NetworkConfig
from hordax.agents.ppo import PPOBatch, PPOConfig, make_agent, validate_ppo
from hordax.agents.ppo.losses import policy_loss, value_loss
from hordax.agents.sgd import ACTIVE_ROWS, minibatch_epochs


def test_gaussian__log_prob_matches_density_and_entropy_matches_monte_carlo():
    mean, log_std = jnp.array([[0.5, -1.0]]), jnp.array([0.3, -0.7])
    x = jnp.array([[1.0, -2.0]])
    std = np.exp(np.asarray(log_std))
    dens = np.exp(-0.5 * ((np.asarray(x) - np.asarray(mean)) / std) ** 2) / (
        std * np.sqrt(2 * np.pi)
    )
    assert float(dist.gaussian_log_prob(mean, log_std, x)[0]) == pytest.approx(
        np.log(dens).sum(), 1e-5
    )
    samples = dist.gaussian_sample(jax.random.key(0), jnp.repeat(mean, 200_000, 0), log_std)
    mc = -float(jnp.mean(dist.gaussian_log_prob(mean, log_std, samples)))
    assert float(dist.gaussian_entropy(mean, log_std)[0]) == pytest.approx(mc, abs=0.01)


def test_categorical__log_prob_entropy_and_sampling_frequencies():
    logits = jnp.array([[1.0, 0.0, -1.0]])
    p = np.exp(logits[0]) / np.exp(logits[0]).sum()
    assert float(dist.categorical_log_prob(logits, jnp.array([2]))[0]) == pytest.approx(
        np.log(p[2])
    )
    assert float(dist.categorical_entropy(logits)[0]) == pytest.approx(-(p * np.log(p)).sum(), 1e-5)
    draws = dist.categorical_sample(jax.random.key(1), jnp.repeat(logits, 100_000, 0))
    np.testing.assert_allclose(np.bincount(np.asarray(draws), minlength=3) / 1e5, p, atol=0.01)


def test_policy_loss__clips_ratio_in_the_direction_of_the_advantage():
    """Ratio 1.5 with A>0 is clipped (zero gradient); with A<0 it is not."""
    old = jnp.zeros(1)
    new = jnp.log(jnp.array([1.5]))
    f = lambda lp, a: policy_loss(lp, old, a, 0.2)[0]  # noqa: E731
    assert float(f(new, jnp.ones(1))) == pytest.approx(-1.2)
    assert float(jax.grad(f)(new, jnp.ones(1))[0]) == 0.0
    assert float(f(new, -jnp.ones(1))) == pytest.approx(1.5)
    assert float(jax.grad(f)(new, -jnp.ones(1))[0]) == pytest.approx(1.5)


def test_value_loss__clipped_takes_the_larger_error():
    v, old, target = jnp.array([2.0]), jnp.array([0.0]), jnp.array([3.0])
    assert float(value_loss(v, old, target, 0.2, False)) == pytest.approx(0.5 * 1.0)
    assert float(value_loss(v, old, target, 0.2, True)) == pytest.approx(0.5 * 2.8**2)


@pytest.mark.parametrize("obs_shape", [(5, 5, 3), (6, 6)])
def test_cnn_torso__acts_on_image_and_grid_observations(obs_shape):
    cfg = PPOConfig(network=NetworkConfig(torso="cnn", hidden_sizes=[32], conv_features=[4, 8]))
    agent = make_agent(cfg, obs_shape, spaces.Discrete(3), num_updates=1)
    state = agent.init(jax.random.key(0))
    obs = jnp.ones((7, *obs_shape))
    action, extras = agent.act(state, obs, jax.random.key(1))
    assert action.shape == (7,) and action.dtype == jnp.int32
    assert extras["value"].shape == (7,) and extras["log_prob"].shape == (7,)
    conv = state.params["actor"]["params"]["CNN_0"]
    assert conv["Conv_0"]["kernel"].shape[-1] == 4 and conv["Conv_1"]["kernel"].shape[-1] == 8


@pytest.mark.parametrize("torso", ["cnn", "grid"])
def test_image_torso__on_flat_observations_names_the_key(torso):
    """``agent.network.torso=cnn`` (or ``grid``) on CartPole's ``f32[4]``: a ValueError
    naming the key and the shape (was "operands could not be broadcast together with shapes
    (0,) (2,)" from inside the convolution, at the first trace)."""
    cfg = PPOConfig(network=NetworkConfig(torso=torso, hidden_sizes=[32]))
    with pytest.raises(ValueError, match=rf"^agent.network.torso='{torso}': needs image .*\(4,\)"):
        make_agent(cfg, (4,), spaces.Discrete(2), num_updates=1)


def test_shared_torso__one_network_whose_outputs_agree_across_methods():
    """shared_torso: one parameter tree with a policy and a value output on one torso;
    act, act_greedy, log_prob and value read the same network."""
    cfg = PPOConfig(network=NetworkConfig(torso="grid", shared_torso=True, hidden_sizes=[32]))
    agent = make_agent(cfg, (7, 7, 2), spaces.Discrete(6), num_updates=1)
    state = agent.init(jax.random.key(0))
    assert set(state.params) == {"actor_critic"}
    tree = state.params["actor_critic"]["params"]
    assert set(tree) == {"GridTorso_0", "_ActionOut_0", "Dense_0"}  # torso, policy, value
    obs = jax.random.randint(jax.random.key(1), (5, 7, 7, 2), 0, 12).astype(jnp.uint8)
    action, extras = agent.act(state, obs, jax.random.key(2))
    assert action.shape == (5,) and extras["value"].shape == (5,)
    np.testing.assert_allclose(extras["value"], agent.value(state, obs), atol=1e-6)
    np.testing.assert_allclose(extras["log_prob"], agent.log_prob(state, obs, action), atol=1e-6)
    (logits, _), _ = agent._dist_value(state.params, obs)
    np.testing.assert_array_equal(agent.act_greedy(state, obs), jnp.argmax(logits, -1))


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("space", [spaces.Discrete(3), spaces.Box(-1.0, 1.0, (2,))])
@pytest.mark.slow
def test_update__raises_probability_of_advantaged_actions(space, shared):
    """One PPO update on a batch where action a* has advantage +1 makes a* more likely."""
    cfg = PPOConfig(
        normalize_advantages=False,
        anneal_lr=False,
        learning_rate=1e-2,
        num_minibatches=2,
        network=NetworkConfig(shared_torso=shared),
    )
    agent = make_agent(cfg, (4,), space, num_updates=1)
    state = agent.init(jax.random.key(0))
    obs = jax.random.normal(jax.random.key(1), (64, 4))
    target_action = (
        jnp.full((64,), 2, jnp.int32)
        if isinstance(space, spaces.Discrete)
        else jnp.full((64, 2), 0.5)
    )
    log_prob = agent.log_prob(state, obs, target_action)
    value = agent.value(state, obs)
    batch = PPOBatch(obs, target_action, log_prob, value, jnp.ones(64), value + 1.0)
    new_state, metrics = agent.update(state, batch, jax.random.key(2))
    new_log_prob = agent.log_prob(new_state, obs, target_action)
    assert float(jnp.mean(new_log_prob - log_prob)) > 0.05
    assert all(np.isfinite(float(v)) for v in metrics.values())


def test_minibatch_epochs__metrics_weighted_by_active_rows_equal_the_batch_mean():
    """With ``ACTIVE_ROWS`` reported, a metric averaged over minibatches (some with no active
    row, whose figure is 0) equals its mean over the batch's active rows, whatever the
    permutation."""
    x = jax.random.normal(jax.random.key(0), (32,))
    active = jnp.zeros(32, bool).at[jnp.array([1, 5, 6, 20])].set(True)

    def step(st, mb):
        xs, m = mb
        rows = jnp.sum(m).astype(jnp.float32)
        mean = jnp.sum(jnp.where(m, xs, 0.0)) / jnp.maximum(rows, 1.0)
        return st, {"x": mean, "plain": jnp.float32(1.0), ACTIVE_ROWS: rows}

    kw = dict(num_epochs=3, num_minibatches=8, num_rows=32, step=step)
    for seed in range(3):
        _, metrics = jax.jit(lambda k: minibatch_epochs(0, (x, active), k, **kw))(
            jax.random.key(seed)
        )
        assert set(metrics) == {"x", "plain"}
        np.testing.assert_allclose(metrics["x"], jnp.mean(x[active]), rtol=1e-5)
        np.testing.assert_allclose(metrics["plain"], 1.0)  # a constant stays itself


def test_update__masked_rows_leave_the_diagnostics_unchanged():
    """A PPO batch with 2 active rows of 64 in 8 minibatches (most with none) reports the
    active rows' entropy, not a figure diluted towards 0 by the empty minibatches."""
    cfg = PPOConfig(learning_rate=1e-9, num_minibatches=8, num_epochs=1)
    agent = make_agent(cfg, (4,), spaces.Box(-1.0, 1.0, (2,)), num_updates=1)
    state = agent.init(jax.random.key(0))
    obs = jax.random.normal(jax.random.key(1), (64, 4))
    action = jnp.zeros((64, 2))
    log_prob, value = agent.log_prob(state, obs, action), agent.value(state, obs)
    mask = jnp.zeros(64, bool).at[jnp.array([3, 40])].set(True)
    batch = PPOBatch(obs, action, log_prob, value, jnp.ones(64), value + 1.0, mask)
    _, metrics = jax.jit(agent.update)(state, batch, jax.random.key(2))
    # A state-independent Gaussian: every row's entropy is the initial one.
    _, entropy = agent._log_prob_entropy(*agent._dist_value(state.params, obs[:1])[0], action[:1])
    np.testing.assert_allclose(metrics["entropy"], entropy[0], rtol=1e-4)
    assert ACTIVE_ROWS not in metrics


def test_bounds_loss__penalizes_means_past_the_box_and_pulls_them_back():
    """``bounds_loss_coef``: the loss grows by coef x the mean squared excess of the Gaussian
    means past the bounds (rows inside add nothing), and an update with only that pull
    (zero advantages) moves an outside mean towards the box; 0 adds no term at all."""
    space = spaces.Box(jnp.array([-1.0, -2.0]), jnp.array([1.0, 2.0]), (2,))
    hp = {"clip_eps": 0.2, "vf_coef": 0.5, "ent_coef": 0.0}
    obs = jax.random.normal(jax.random.key(1), (8, 4))
    base = PPOConfig(ent_coef=0.0, anneal_lr=False, learning_rate=1e-2, num_minibatches=1)
    off = make_agent(base, (4,), space, num_updates=1)
    on = make_agent(dataclasses.replace(base, bounds_loss_coef=0.5), (4,), space, 1)
    state = off.init(jax.random.key(0))
    # push the means out: the actor's output bias, [3, -2.5] (excess [2, 0.5]) for every row
    params = jax.tree_util.tree_map_with_path(
        lambda path, x: (
            x + jnp.array([3.0, -2.5])
            if x.shape == (2,) and "bias" in str(path[-1]) and "Dense" in str(path)
            else x
        ),
        state.params,
    )
    mu = off._dist(params, obs)[0]
    excess = np.maximum(0, np.asarray(mu) - [1, 2]) + np.maximum(0, [-1, -2] - np.asarray(mu))
    assert excess.sum() > 0, mu
    action = jnp.zeros((8, 2))
    value = off.value(state, obs)
    batch = PPOBatch(obs, action, off.log_prob(state, obs, action), value, jnp.zeros(8), value)
    loss_off, m_off = off._loss(params, hp, batch)
    loss_on, m_on = on._loss(params, hp, batch)
    expected = float(np.mean(np.sum(excess**2, -1)))
    assert float(m_on["bounds_loss"]) == pytest.approx(expected, rel=1e-5)
    assert float(loss_on - loss_off) == pytest.approx(0.5 * expected, rel=1e-4)
    assert "bounds_loss" not in m_off
    moved = on.update(state.replace(params=params), batch, jax.random.key(2))[0]
    mu_after = on._dist(moved.params, obs)[0]
    after = np.maximum(0, np.asarray(mu_after) - [1, 2]) + np.maximum(
        0, [-1, -2] - np.asarray(mu_after)
    )
    assert float(np.sum(after**2)) < float(np.sum(excess**2))


@pytest.mark.parametrize(
    "change,match",
    [
        (dict(bounds_loss_coef=-1.0), r"agent.bounds_loss_coef=-1.0: must be >= 0"),
        (dict(learning_rate=-1e-3), r"agent.learning_rate=-0.001: must be a finite number > 0"),
        (dict(gamma=1.5), r"agent.gamma=1.5: must be in \[0, 1\]"),
        (dict(num_minibatches=3), r"agent.num_minibatches=3: must divide the batch .* = 512"),
        (dict(num_epochs=0), r"agent.num_epochs=0"),
        (dict(network=NetworkConfig(activation="sigmoid")), r"agent.network.activation='sigmoid'"),
        # the grid torso embeds integer codes: z-scored codes truncate to a few (DoorKey's 0..13
        # would embed as 0, 1 or 2), so normalizing them is refused rather than trained on
        (
            dict(normalize_obs=True, network=NetworkConfig(torso="grid")),
            r"agent.normalize_obs=True: .*torso='grid'",
        ),
    ],
)
def test_validate_ppo__names_key_value_and_rule(change, match):
    with pytest.raises(ValueError, match=match):
        validate_ppo(dataclasses.replace(PPOConfig(), **change), batch_size=512)


@pytest.mark.timeout(120)
def test_recurrent_with_critic_observations__refused_naming_the_key():
    """A recurrent network reads one observation: with critic observations (an
    ``{"actor", "critic"}`` pair) agent.network.rnn_size is refused by the config check and
    by the agent, not a ``KeyError: None`` from flax at init."""
    cfg = PPOConfig(critic_obs=True, network=NetworkConfig(hidden_sizes=[8], rnn_size=4))
    match = r"agent.network.rnn_size=4: .*critic observations"
    with pytest.raises(ValueError, match=match):
        validate_ppo(cfg, batch_size=512)
    with pytest.raises(ValueError, match=match):
        make_agent(cfg, {"actor": (3,), "critic": (5,)}, spaces.Discrete(2), 1)
