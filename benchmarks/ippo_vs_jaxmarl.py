"""IPPO training throughput: hordax's PPO trainer (``agent=ippo``) on MPE-SimpleSpread-v0
beside a JaxMARL IPPO driver on ``MPE_simple_spread_v3`` (``jaxmarl`` 0.2.0), same process,
interleaved repeats.

JaxMARL's ``baselines/IPPO/ippo_ff_mpe.py`` does not ship in the 0.2.0 wheel, so
:func:`jaxmarl_train` is a minimal driver written here from its documented config
(``baselines/IPPO/config/ippo_ff_mpe.yaml``: 16 envs x 128 steps, 4 epochs x 4 minibatches,
lr 2.5e-4 annealed, gamma 0.99, lambda 0.95, clip 0.2, ent 0.01, vf 0.5, grad norm 0.5, tanh
64x64 actor and critic, parameters shared by all agents, the agents folded into the batch)
and the PureJaxRL structure its scripts follow (``LogWrapper``, dict observations batched
into ``[num_envs * n_agents]`` rows, one ``lax.scan`` per update). Both sides run the same
number of updates with the same sizes; steps/s counts env steps (``num_envs`` per step,
JaxMARL's ``TOTAL_TIMESTEPS`` unit). Compile time is reported apart.

    python benchmarks/ippo_vs_jaxmarl.py --updates 20 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from hordax import strict_json

CONFIG = dict(
    LR=2.5e-4, NUM_ENVS=16, NUM_STEPS=128, UPDATE_EPOCHS=4, NUM_MINIBATCHES=4, GAMMA=0.99,
    GAE_LAMBDA=0.95, CLIP_EPS=0.2, ENT_COEF=0.01, VF_COEF=0.5, MAX_GRAD_NORM=0.5,
)  # fmt: skip


def hordax_train(num_updates: int):
    """``train(key)`` of hordax's IPPO with the config above."""
    import hordax
    from hordax.agents.ppo import IPPOConfig
    from hordax.training.config import TrainerConfig
    from hordax.training.trainers.ppo import PPOTrainer

    env, params = hordax.make("MPE-SimpleSpread-v0")
    c = CONFIG
    tc = TrainerConfig(
        num_envs=c["NUM_ENVS"],
        rollout_length=c["NUM_STEPS"],
        total_env_steps=c["NUM_ENVS"] * c["NUM_STEPS"] * num_updates,
        num_chunks=1,
    )
    ac = IPPOConfig(
        learning_rate=c["LR"], num_epochs=c["UPDATE_EPOCHS"], num_minibatches=c["NUM_MINIBATCHES"],
        gamma=c["GAMMA"], gae_lambda=c["GAE_LAMBDA"], clip_eps=c["CLIP_EPS"],
        ent_coef=c["ENT_COEF"], vf_coef=c["VF_COEF"], max_grad_norm=c["MAX_GRAD_NORM"],
    )  # fmt: skip
    return PPOTrainer(tc, ac, env, params).train


def jaxmarl_train(num_updates: int):
    """A minimal JaxMARL IPPO (feed-forward, shared parameters) on MPE_simple_spread_v3."""
    import flax.linen as nn
    import jaxmarl
    import optax
    from jaxmarl.wrappers.baselines import LogWrapper

    c = CONFIG
    env = LogWrapper(jaxmarl.make("MPE_simple_spread_v3"))
    agents = env.agents
    n_agents, n_envs, n_steps = len(agents), c["NUM_ENVS"], c["NUM_STEPS"]
    actors = n_envs * n_agents
    n_actions = env.action_space(agents[0]).n
    mb_size = actors * n_steps // c["NUM_MINIBATCHES"]

    class ActorCritic(nn.Module):
        @nn.compact
        def __call__(self, x):
            init = nn.initializers.orthogonal
            a = nn.tanh(nn.Dense(64, kernel_init=init(np.sqrt(2)))(x))
            a = nn.tanh(nn.Dense(64, kernel_init=init(np.sqrt(2)))(a))
            logits = nn.Dense(n_actions, kernel_init=init(0.01))(a)
            v = nn.tanh(nn.Dense(64, kernel_init=init(np.sqrt(2)))(x))
            v = nn.tanh(nn.Dense(64, kernel_init=init(np.sqrt(2)))(v))
            return jax.nn.log_softmax(logits), nn.Dense(1, kernel_init=init(1.0))(v)[:, 0]

    def log_prob_of(logp, a):
        return jnp.take_along_axis(logp, a[:, None], axis=-1)[:, 0]

    def to_rows(d):  # {agent: [E, ...]} -> [A * E, ...] (agent-major, as JaxMARL's batchify)
        return jnp.concatenate([d[a] for a in agents]).reshape((actors, -1))

    def to_dict(x):
        x = x.reshape((n_agents, n_envs))
        return {a: x[i] for i, a in enumerate(agents)}

    net = ActorCritic()
    total = num_updates * c["UPDATE_EPOCHS"] * c["NUM_MINIBATCHES"]
    lr = optax.linear_schedule(c["LR"], 0.0, total)
    tx = optax.chain(optax.clip_by_global_norm(c["MAX_GRAD_NORM"]), optax.adam(lr, eps=1e-5))

    def train(key):
        key, k_net, k_env = jax.random.split(key, 3)
        obs_dim = env.observation_space(agents[0]).shape[0]
        params = net.init(k_net, jnp.zeros((1, obs_dim)))
        opt = tx.init(params)
        obs, state = jax.vmap(env.reset)(jax.random.split(k_env, n_envs))

        def env_step(carry, _):
            params, state, obs, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            x = to_rows(obs)
            logp, value = net.apply(params, x)
            action = jax.random.categorical(k_act, logp)
            log_prob = log_prob_of(logp, action)
            nobs, state, reward, done, info = jax.vmap(env.step)(
                jax.random.split(k_step, n_envs), state, to_dict(action)
            )
            tr = (x, action, log_prob, value, to_rows(reward)[:, 0], to_rows(done)[:, 0])
            return (params, state, nobs, key), tr

        def update(carry, _):
            params, opt, state, obs, key = carry
            (params, state, obs, key), (x, a, lp, v, r, d) = jax.lax.scan(
                env_step, (params, state, obs, key), None, n_steps
            )
            _, last_v = net.apply(params, to_rows(obs))

            def gae(acc, t):
                adv, nv = acc
                reward, value, done = t
                delta = reward + c_g * nv * (1 - done) - value
                adv = delta + c_g * c["GAE_LAMBDA"] * (1 - done) * adv
                return (adv, value), adv

            c_g = c["GAMMA"]
            _, adv = jax.lax.scan(gae, (jnp.zeros_like(last_v), last_v), (r, v, d), reverse=True)
            target = adv + v

            def loss_fn(params, mb):
                x, a, lp, v, adv, target = mb
                logp, value = net.apply(params, x)
                new_lp = log_prob_of(logp, a)
                vc = v + jnp.clip(value - v, -c["CLIP_EPS"], c["CLIP_EPS"])
                vl = 0.5 * jnp.maximum((value - target) ** 2, (vc - target) ** 2).mean()
                entropy = -jnp.sum(jnp.exp(logp) * logp, axis=-1).mean()
                ratio = jnp.exp(new_lp - lp)
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pl = -jnp.minimum(
                    ratio * adv, jnp.clip(ratio, 1 - c["CLIP_EPS"], 1 + c["CLIP_EPS"]) * adv
                ).mean()
                return pl + c["VF_COEF"] * vl - c["ENT_COEF"] * entropy

            def epoch(carry, _):
                params, opt, key = carry
                key, k = jax.random.split(key)
                batch = jax.tree.map(
                    lambda y: y.reshape((n_steps * actors, *y.shape[2:])),
                    (x, a, lp, v, adv, target),
                )
                perm = jax.random.permutation(k, n_steps * actors)
                mbs = jax.tree.map(
                    lambda y: y[perm].reshape((c["NUM_MINIBATCHES"], mb_size, *y.shape[1:])),
                    batch,
                )

                def mb_step(po, mb):
                    params, opt = po
                    grads = jax.grad(loss_fn)(params, mb)
                    upd, opt = tx.update(grads, opt, params)
                    return (optax.apply_updates(params, upd), opt), None

                (params, opt), _ = jax.lax.scan(mb_step, (params, opt), mbs)
                return (params, opt, key), None

            (params, opt, key), _ = jax.lax.scan(
                epoch, (params, opt, key), None, c["UPDATE_EPOCHS"]
            )
            return (params, opt, state, obs, key), None

        carry, _ = jax.lax.scan(update, (params, opt, state, obs, key), None, num_updates)
        return carry[0]

    return train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    steps = args.updates * CONFIG["NUM_ENVS"] * CONFIG["NUM_STEPS"]
    programs, compile_s = {}, {}
    for name, make in (("hordax", hordax_train), ("jaxmarl", jaxmarl_train)):
        key = jax.random.key(0)
        t0 = time.perf_counter()
        programs[name] = jax.jit(make(args.updates)).lower(key).compile()
        compile_s[name] = time.perf_counter() - t0
    times = {"hordax": [], "jaxmarl": []}
    loads = []
    for r in range(args.repeats):  # interleaved
        for name in ("hordax", "jaxmarl"):
            t0 = time.perf_counter()
            jax.block_until_ready(programs[name](jax.random.key(r)))
            times[name].append(time.perf_counter() - t0)
        loads.append(os.getloadavg()[0])
    sps = {k: steps / min(v) for k, v in times.items()}
    print(
        strict_json.dumps(
            {
                "env_steps_per_run": steps,
                "config": CONFIG,
                "updates": args.updates,
                "sps_best": sps,
                "ratio_hordax_over_jaxmarl": sps["hordax"] / sps["jaxmarl"],
                "run_s": times,
                "compile_s": compile_s,
                "loadavg_1min": loads,
            }
        )
    )


if __name__ == "__main__":
    main()
