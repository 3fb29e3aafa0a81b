"""MPE: random-action env steps/s of hordax against JaxMARL 0.2.0, every scenario both have.

Through the shared harness (:mod:`hordax.benchmarking`): each side's per-agent
observations, rewards, done flags and info stay in the timed program; both sides draw each
agent's discrete action uniformly with the same sampler and keys; runs interleave in one
process. Scenarios at PettingZoo's defaults (both libraries follow them), discrete
actions, episodes of 25 steps. hordax on its two paths: ``vmap(env.step)`` (gymnax's
in-step reset of every env, as JaxMARL's own auto-reset) and ``VecEnv`` (amortized fresh
resets). An env step is one step of one env (all agents).

    pip install -e ".[bench]"
    python benchmarks/mpe_vs_jaxmarl.py   # writes benchmarks/results/mpe_vs_jaxmarl.json
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import hordax
from hordax.benchmarking import Subject, runner
from hordax.benchmarking.subjects import vecenv_subject, vmap_subject

SCENARIOS = [  # hordax id, JaxMARL id
    ("MPE-Simple-v0", "MPE_simple_v3"),
    ("MPE-SimpleSpread-v0", "MPE_simple_spread_v3"),
    ("MPE-SimpleTag-v0", "MPE_simple_tag_v3"),
    ("MPE-SimpleAdversary-v0", "MPE_simple_adversary_v3"),
    ("MPE-SimplePush-v0", "MPE_simple_push_v3"),
    ("MPE-SimpleReference-v0", "MPE_simple_reference_v3"),
    ("MPE-SimpleSpeakerListener-v0", "MPE_simple_speaker_listener_v4"),
    ("MPE-SimpleCrypto-v0", "MPE_simple_crypto_v3"),
]
# simple_world_comm is left out: JaxMARL 0.2.0's has continuous (Box) actions only.
#: Scenarios timed at every default size; the others at 4,096 envs only (CPU time).
HEADLINE = {"MPE-SimpleSpread-v0", "MPE-SimpleTag-v0"}


def jaxmarl_subject(env_id: str, n: int) -> Subject:
    from importlib.metadata import version

    import jaxmarl

    env = jaxmarl.make(env_id)
    agents = list(env.agents)
    vstep = jax.vmap(env.step)

    def reset(key):
        return jax.vmap(env.reset)(jax.random.split(key, n))[1]

    def step(key, state, action):
        actions = {a: action[:, i] for i, a in enumerate(agents)}
        obs, state, reward, dones, info = vstep(jax.random.split(key, n), state, actions)
        out = {"obs": obs, "reward": jnp.stack([reward[a] for a in agents], -1)}
        out.update(done=dones["__all__"], dones=dones, info=info)
        return state, out

    return Subject(f"jaxmarl {version('jaxmarl')}", n, reset, step, "jaxmarl", "vmap")


def case(hid: str, jid: str) -> runner.Case:
    def build(n: int):
        env, params = hordax.make(hid)
        nvec = jnp.asarray(env.action_space(params).nvec)
        sides = [
            vecenv_subject(env, params, n, name="hordax VecEnv"),
            vmap_subject(env, params, n, name="hordax vmap(env.step)"),
            jaxmarl_subject(jid, n),
        ]
        return sides, lambda key: jax.random.randint(key, (n, nvec.size), 0, nvec)

    return runner.Case({"scenario": hid}, build, sizes=None if hid in HEADLINE else (4096,))


if __name__ == "__main__":
    runner.main(
        [case(*pair) for pair in SCENARIOS],
        __doc__.splitlines()[0],
        sizes=(1024, 4096, 16384),
        steps=100,
        out="benchmarks/results/mpe_vs_jaxmarl.json",
        packages=("jaxmarl",),
    )
