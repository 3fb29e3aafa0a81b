"""Multi-agent PPO (IPPO/MAPPO in the PPO trainer) and the critic-observation mechanism.

- masking: padding slots full of garbage and agents that finish at different times change
  neither the normalizer statistics, nor the episode returns, nor the PPO loss and its
  gradients (compared with the same data without the padding slots);
- per-team parameters: one team's data never moves another team's parameters;
- critic observations: ``VecEnv(critic_obs=True)`` against a hand computation (the
  terminal state's critic observation before the reset);
- a population equals its single runs (IPPO's learning test:
  tests/training/test_trainer_learning.py).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from marl_envs import Padded, TwoTeams

from hordax.agents.ppo import IPPOConfig, MAPPOConfig, PPOBatch, make_agent
from hordax.envs.core import step_no_reset
from hordax.envs.debug.multi_point_mass import MultiPointMass
from hordax.envs.wrappers import ClipAction, LogEpisode, VecEnv
from hordax.training.config import TrainerConfig
from hordax.training.core.env_stack import make_env_stack
from hordax.training.core.estimators import compute_gae
from hordax.training.core.metrics import team_episode_metrics
from hordax.training.core.multi_agent import TeamAgent, env_teams
from hordax.training.trainers.population import PopulationTrainer
from hordax.training.trainers.ppo import PPOTrainer

KEY = jax.random.key(0)
T, B = 40, 4


def _roll(env, params, actions):
    """Step the normalized env stack with scripted actions ``[T, B, n, 2]``: the raw
    observations the stack returns, infos and the final stack state."""
    cfg = IPPOConfig(normalize_obs=True, normalize_reward=True)
    stack = make_env_stack(env, cfg, B, reset_pool=-1)
    obs, state = stack.reset(KEY, params)
    mask0 = stack.agent_mask(state, params)

    def step(carry, xs):
        state, obs = carry
        key, action = xs
        nobs, state, reward, term, trunc, info = stack.step(key, state, action, params)
        out = dict(obs=obs, reward=reward, term=term, trunc=trunc, info=info)
        return (state, nobs), out

    keys = jax.random.split(jax.random.key(1), T)
    (state, _), out = jax.jit(lambda s, o: jax.lax.scan(step, (s, o), (keys, actions)))(state, obs)
    return stack, state, mask0, out


@functools.cache
def _padded_and_real():
    params = MultiPointMass(2).default_params.replace(goal_radius=0.5, max_steps_in_episode=15)
    actions = jax.random.uniform(jax.random.key(2), (T, B, 3, 2), minval=-1.0, maxval=1.0)
    real = _roll(MultiPointMass(2), params, actions[:, :, :2])
    padded = _roll(Padded(2, pad=1), params, actions)
    return params, actions, real, padded


@pytest.mark.slow
def test_masked_slots__normalizer_statistics_and_episode_returns_unchanged():
    params, _, (_, s_real, _, real), (_, s_pad, mask0, padded) = _padded_and_real()
    assert not bool(jnp.any(mask0[:, 2])) and bool(jnp.all(mask0[:, :2]))
    nm = padded["info"]["next_agent_mask"]
    # Agents finished at different times: some real agent was masked while its episode ran.
    assert bool(jnp.any(~nm[..., :2] & ~padded["term"][..., None] & ~padded["trunc"][..., None]))
    st_r, st_p = s_real.env_state.obs_stats, s_pad.env_state.obs_stats
    np.testing.assert_allclose(st_p.mean, st_r.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(st_p.var, st_r.var, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(st_p.count, st_r.count, rtol=1e-6)
    np.testing.assert_allclose(
        s_pad.return_stats.var, s_real.return_stats.var, rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(padded["obs"][:, :, :2], real["obs"], rtol=1e-5, atol=1e-5)
    m_real = team_episode_metrics(real["info"], env_teams(MultiPointMass(2), params))
    m_pad = team_episode_metrics(padded["info"], env_teams(Padded(2, 1), params))
    assert float(m_real["episode_count"]) >= 4
    for k in ("episode_count", "episode_return_sum", "episode_length_sum"):
        np.testing.assert_allclose(m_pad[k], m_real[k], rtol=1e-5)


def _batch(agent, agent_state, out, mask0, n):
    """The PPO rows the trainer builds from a rollout (GAE per agent, masked)."""
    obs, info = out["obs"], out["info"]
    value = agent.value(agent_state, obs)
    log_prob = jnp.zeros_like(value)
    term = info["agent_terminated"] | out["term"][..., None]
    trunc = jnp.broadcast_to(out["trunc"][..., None], term.shape)
    next_value = jnp.concatenate([value[1:], value[-1:]])
    adv, target = compute_gae(out["reward"], value, next_value, term, trunc, 0.99, 0.95)
    mask = jnp.concatenate([mask0[None], info["next_agent_mask"][:-1]])
    seq = dict(obs=obs, action=out["action"], log_prob=log_prob, value=value)
    return agent.batches({**seq, "advantage": adv, "target": target}, mask, PPOBatch)


@pytest.mark.slow
def test_masked_slots__loss_and_gradients_unchanged():
    params, actions, (s_r, _, m_r, real), (s_p, _, m_p, padded) = _padded_and_real()
    cfg = IPPOConfig()
    losses, grads = [], []
    for env, out, mask0, act in ((MultiPointMass(2), real, m_r, actions[:, :, :2]),
                                 (Padded(2, 1), padded, m_p, actions)):  # fmt: skip
        teams = env_teams(env, params)
        inner = {t.name: make_agent(cfg, (t.obs_dim,), t.action_space, 1) for t in teams}
        agent = TeamAgent(inner, teams, env.num_agents, env.action_space(params))
        state = agent.init(KEY)  # the same parameters for both envs
        batch = _batch(agent, state, {**out, "action": act}, mask0, env.num_agents)["agent"]
        ppo = inner["agent"]
        fn = jax.value_and_grad(ppo._loss, has_aux=True)
        (loss, diag), g = fn(state.params["agent"], state.hparams, batch)
        losses.append((loss, diag))
        grads.append(g)
    (l_r, d_r), (l_p, d_p) = losses
    np.testing.assert_allclose(l_p, l_r, rtol=1e-5, atol=1e-6)
    for k in d_r:
        np.testing.assert_allclose(d_p[k], d_r[k], rtol=1e-5, atol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), *grads)


def _rows(n, d, k, seed):
    """A random PPO row batch: ``n`` rows, observation size ``d``, ``k`` actions."""
    r = jax.random.split(jax.random.key(seed), 3)
    return PPOBatch(
        obs=jax.random.normal(r[0], (n, d)),
        action=jax.random.randint(r[1], (n,), 0, k),
        log_prob=jnp.full((n,), -1.0),
        value=jnp.zeros((n,)),
        advantage=jax.random.normal(r[2], (n,)),
        target=jax.random.normal(r[2], (n,)),
        mask=jnp.ones((n,), bool),
    )


@pytest.mark.slow
def test_team_data_never_moves_another_teams_parameters():
    env = TwoTeams()
    params = env.default_params
    cfg = IPPOConfig(num_minibatches=2)
    trainer = PPOTrainer(
        TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64), cfg, env, params
    )  # noqa: E501
    agent = trainer.agent
    assert {t.name: t.obs_dim for t in agent.teams} == {"a": 2, "b": 4}
    assert {t.name: int(t.action_space.n) for t in agent.teams} == {"a": 3, "b": 5}
    state = agent.init(KEY)
    b = _rows(64, 4, 5, 1)
    new1, _ = agent.update(state, {"a": _rows(32, 2, 3, 2), "b": b}, KEY)
    new2, _ = agent.update(state, {"a": _rows(32, 2, 3, 3), "b": b}, KEY)
    # Team b's parameters and optimizer state: bit for bit the same whatever team a saw.
    jax.tree.map(np.testing.assert_array_equal, new1.params["b"], new2.params["b"])
    jax.tree.map(np.testing.assert_array_equal, new1.opt_state["b"], new2.opt_state["b"])
    changed = jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.any(x != y)),
                                           new1.params["a"], new2.params["a"]))  # fmt: skip
    assert any(changed)


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_team_ent_coef__sets_one_teams_entropy_coefficient():
    """``agent.team_ent_coef={a: 0.5}``: team a's update is the update with ``ent_coef`` 0.5,
    team b's the one with the shared 0.01, and the state's shared hparams are kept."""
    env = TwoTeams()
    tc = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64)

    def agent_of(**kw):
        cfg = IPPOConfig(num_epochs=1, num_minibatches=1, **kw)
        return PPOTrainer(tc, cfg, env, env.default_params).agent

    shared, mixed = agent_of(ent_coef=0.01), agent_of(ent_coef=0.01, team_ent_coef={"a": 0.5})
    state = shared.init(KEY)
    batches = {"a": _rows(32, 2, 3, 2), "b": _rows(64, 4, 5, 1)}
    update = jax.jit(shared.update)  # one program for both hparam values (they are traced)
    new_shared, _ = update(state, batches, KEY)
    high = state.replace(hparams={**state.hparams, "ent_coef": jnp.float32(0.5)})
    new_high, _ = update(high, batches, KEY)
    new_mixed, _ = jax.jit(mixed.update)(state, batches, KEY)
    jax.tree.map(np.testing.assert_array_equal, new_mixed.params["a"], new_high.params["a"])
    jax.tree.map(np.testing.assert_array_equal, new_mixed.params["b"], new_shared.params["b"])
    differs = jax.tree.map(lambda x, y: bool(jnp.any(x != y)),
                           new_mixed.params["a"], new_shared.params["a"])  # fmt: skip
    assert any(jax.tree.leaves(differs))  # the coefficient reached team a's loss
    jax.tree.map(np.testing.assert_array_equal, new_mixed.hparams, state.hparams)


@pytest.mark.timeout(900)  # two MAPPO programs: ~8 min of compiling at load average 25
@pytest.mark.slow
def test_population_equals_single_runs_and_mappo_runs():
    env = TwoTeams()
    params = env.default_params
    tc = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=4 * 8 * 3, num_chunks=1)
    cfg = MAPPOConfig(num_minibatches=2, agent_id=True, normalize_obs=True)
    trainer = PPOTrainer(tc, cfg, env, params)
    pop = PopulationTrainer(trainer, 2, seed=5)
    p_state, p_metrics = jax.jit(pop.train)(pop.init_key(5))
    single = jax.jit(trainer.train)  # one program for both seeds (a new jit would recompile)
    for i in range(2):
        s_state, s_metrics = single(jax.random.key(5 + i))
        jax.tree.map(
            lambda a, b, i=i: np.testing.assert_allclose(a[i], b, rtol=1e-5, atol=1e-6),
            p_state.agent.params,
            s_state.agent.params,
        )
        np.testing.assert_allclose(
            p_metrics["episode_return_sum"][i], s_metrics["episode_return_sum"], rtol=1e-5
        )
    assert set(p_metrics) >= {"team/a/episode_return_sum", "team/b/episode_return_sum"}
    saved = trainer.saved_agent(s_state)
    assert set(saved["params"]) == {"a", "b"}
    assert set(saved["normalizer"]["obs_stats"]) == {"actor", "critic"}  # critic stats saved


def test_critic_observation__terminal_state_before_reset():
    """``VecEnv(critic_obs=True)`` by hand: the final observation's critic part is the
    critic observation of ``step_no_reset``'s terminal state, the observation's that of the
    state returned (a new episode's after a reset)."""
    env = TwoTeams()
    params = env.default_params.replace(max_steps_in_episode=2)
    inner = LogEpisode(ClipAction(env))
    vec = VecEnv(inner, 3, critic_obs=True)
    obs, state = vec.reset(KEY, params)
    np.testing.assert_array_equal(
        obs["critic"], jax.vmap(env.critic_observation, (0, None))(state.env_state, params)
    )  # noqa: E501
    action = jnp.array([[1, 4, 4]] * 3, jnp.int32)
    for t in range(2):
        key = jax.random.key(10 + t)
        nobs, nstate, _, term, trunc, info = vec.step(key, state, action, params)
        keys = jax.random.split(key, 3)
        for b in range(3):
            one = jax.tree.map(lambda x, b=b: x[b], state)
            _, s_end, *_ = step_no_reset(inner, keys[b], one, action[b], params)
            hand = env.critic_observation(s_end.env_state, params)
            np.testing.assert_allclose(info["final_observation"]["critic"][b], hand, rtol=1e-6)
            now = env.critic_observation(
                jax.tree.map(lambda x, b=b: x[b], nstate.env_state), params
            )  # noqa: E501
            np.testing.assert_allclose(nobs["critic"][b], now, rtol=1e-6)
        state = nstate
    assert bool(jnp.all(trunc))  # the last step ended every episode: reset states differ
    assert not np.allclose(info["final_observation"]["critic"], nobs["critic"])


def test_bad_config__named_key():
    env, params = MultiPointMass(2), MultiPointMass(2).default_params
    tc = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64)
    with pytest.raises(ValueError, match="agent.critic_obs"):
        PPOTrainer(tc, MAPPOConfig(), env, params)
    with pytest.raises(ValueError, match="agent.team_hidden_sizes"):
        PPOTrainer(tc, IPPOConfig(team_hidden_sizes={"nope": [8]}), TwoTeams(), params)
    with pytest.raises(ValueError, match="agent.team_ent_coef"):
        PPOTrainer(tc, IPPOConfig(team_ent_coef={"nope": 0.1}), TwoTeams(), params)
    with pytest.raises(ValueError, match="agent.team_ent_coef.a"):
        PPOTrainer(tc, IPPOConfig(team_ent_coef={"a": -1.0}), TwoTeams(), params)


def test_bad_config__multi_agent_settings_need_a_multi_agent_env():
    """Host checks, one line naming the key: IPPO's per-agent settings on a single-agent env
    (were silently ignored: plain PPO ran); a single-agent trainer on a multi-agent env is
    test_single_agent_trainers__refuse_a_multi_agent_env_with_a_value_error."""
    import hordax

    tc = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64)
    single, sp = hordax.make("CartPole-v1")
    for cfg, key in (
        (IPPOConfig(team_ent_coef={"nope": 0.1}), "agent.team_ent_coef"),
        (IPPOConfig(team_hidden_sizes={"nope": [8]}), "agent.team_hidden_sizes"),
        (IPPOConfig(agent_id=True), "agent.agent_id"),
    ):
        with pytest.raises(ValueError, match=rf"^{key}=.*single-agent"):
            PPOTrainer(tc, cfg, single, sp)
    PPOTrainer(tc, IPPOConfig(), single, sp)  # IPPO's defaults on one agent: plain PPO


def test_bad_config__agent_ensemble_on_a_multi_agent_env_is_refused_before_training():
    """``agent=ensemble`` combines single-agent policies (its evaluation builds one PPO
    network over the stacked observation): on a multi-agent env the run trained to the end
    and then died with ``KeyError: 'actor'``; now it is refused up front, naming the key."""
    from hordax.training.config import EnsembleConfig, PopulationConfig, TrainConfig
    from hordax.training.trainers import make_trainer, validate

    tc = TrainerConfig(num_envs=4, rollout_length=8, total_env_steps=64)
    for agent, algorithms in ((IPPOConfig(), []), (IPPOConfig(), ["ippo", "mappo"])):
        cfg = TrainConfig(
            trainer=tc,
            agent=agent,
            population=PopulationConfig(size=2 if not algorithms else 1),
            ensemble=EnsembleConfig(enabled=True, algorithms=algorithms),
        )
        env, params = TwoTeams(), TwoTeams().default_params
        with pytest.raises(ValueError, match=r"^ensemble\.enabled=True: .*multi-agent"):
            make_trainer(cfg, env, params, validate(cfg))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", ["pqn", "pql"])
def test_single_agent_trainers__refuse_a_multi_agent_env_with_a_value_error(name):
    """agent=pqn / agent=pql on a multi-agent env: a ValueError naming the agent and what to
    use instead, which ``hordax train`` prints as one line (was a NotImplementedError, a
    traceback from the CLI)."""
    from hordax.agents.pql import PQLConfig
    from hordax.agents.pqn import PQNConfig
    from hordax.training.config import TrainConfig
    from hordax.training.trainers import validate
    from hordax.training.trainers.pql import PQLTrainer
    from hordax.training.trainers.pqn import PQNTrainer

    tcfg = TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=64, num_chunks=1)
    acfg = {"pqn": PQNConfig(num_minibatches=1), "pql": PQLConfig(batch_size=16, buffer_size=64)}
    acfg = acfg[name]
    resolved = validate(TrainConfig(agent=acfg, trainer=tcfg))
    trainer = {"pqn": PQNTrainer, "pql": PQLTrainer}[name]
    env = MultiPointMass()
    with pytest.raises(ValueError, match=rf"^agent\.name={name}: .*multi-agent.*agent=ippo"):
        trainer(tcfg, acfg, env, env.default_params, resolved)
