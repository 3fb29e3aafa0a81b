"""Does a trained MPE-SimpleSpeakerListener-v0 policy communicate? For every member of a run:

- the speaker's message distribution ``pi(m | goal)`` for each of the three goal colours
  (the speaker's whole observation), the mutual information ``I(m; goal)`` in bits between
  the goal (uniform) and the sampled message, and the same for the greedy message (at most
  ``log2 3 = 1.585`` bits: three goals, three words, a one-to-one code);
- how much the listener's policy reads the message: on fresh reset observations, the mean
  total-variation distance between the listener's action distributions under the three
  possible one-hot messages (0: the listener ignores the speaker).

    python benchmarks/speaker_listener_comm.py RUN_DIR [RUN_DIR ...]

Prints one JSON line per run. ``RUN_DIR`` is a ``hordax train`` run directory
(``config.yaml`` + ``params.msgpack``; a population gives one entry per member).
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np

from hordax import strict_json
from hordax.envs import make
from hordax.envs.mpe.simple_speaker_listener import LANDMARK_COLORS
from hordax.envs.wrappers.normalize import RunningStats, normalize, slot_stats
from hordax.training.ensemble.members import load_config
from hordax.training.evaluation.policy import groups_of, load_saved
from hordax.training.trainers.registry import algorithm


def mutual_information(p_m_given_g: np.ndarray) -> float:
    """``I(m; g)`` in bits for a uniform goal and ``p(m | g)`` ``[G, M]``."""
    p = np.clip(p_m_given_g, 1e-12, 1.0)
    marginal = p.mean(0)
    return float(np.mean(np.sum(p * (np.log2(p) - np.log2(marginal)), -1)))


def member_report(team_agent, algo: str, params, stats, env, env_params, num_states: int) -> dict:
    """The speaker's code and the listener's use of it for one member's parameters."""
    state = algorithm(algo).inference_state(params)
    teams = {t.name: t for t in team_agent.teams}
    n, width = env.num_agents, env.observation_space(env_params).shape[-1]

    def dist(obs: jax.Array, name: str) -> jax.Array:
        """Action probabilities of team ``name`` on stacked observations ``[B, n, D]``."""
        if stats is not None:
            frozen = RunningStats(jnp.asarray(stats["mean"]), jnp.asarray(stats["var"]), None)
            obs = normalize(obs, *slot_stats(frozen, env.team_index))
        team = teams[name]
        member = team_agent._member(state, team)
        logits = team_agent.agents[name]._dist(member.params, team_agent._inputs(obs, team))[0]
        return jax.nn.softmax(logits, -1)

    # The speaker: its observation is the goal colour, nothing else.
    goals = np.zeros((3, n, width), np.float32)
    goals[:, 0, :3] = LANDMARK_COLORS
    p_speaker = np.asarray(dist(jnp.asarray(goals), "speaker"))  # [3 goals, 3 words]
    greedy = p_speaker.argmax(-1)
    p_greedy = np.eye(3)[greedy]

    # The listener on fresh reset observations, with each of the three words heard.
    keys = jax.random.split(jax.random.key(123), num_states)
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(keys, env_params)
    probs = []
    for word in range(3):
        heard = obs.at[:, 1, 8:11].set(jnp.eye(3)[word])
        probs.append(np.asarray(dist(heard, "listener")))  # [S, 5]
    tv = np.mean(
        [0.5 * np.abs(probs[a] - probs[b]).sum(-1).mean() for a in range(3) for b in range(a)]
    )
    return {
        "speaker_p_word_given_goal": np.round(p_speaker, 3).tolist(),
        "speaker_greedy_word_per_goal": greedy.tolist(),
        "mi_sampled_bits": round(mutual_information(p_speaker), 4),
        "mi_greedy_bits": round(mutual_information(p_greedy), 4),
        "listener_tv_between_words": round(float(tv), 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--states", type=int, default=1024, help="reset states for the listener")
    args = ap.parse_args()
    for run_dir in args.run_dirs:
        cfg = load_config(run_dir)
        env, env_params = make(cfg.env.id, params=dict(cfg.env.params), **dict(cfg.env.kwargs))
        saved = load_saved(os.path.join(run_dir, "params.msgpack"))
        (group,) = groups_of(cfg, saved, env, env_params, deterministic=True)
        k = group.members.size
        rows = []
        for i in range(k):
            params = jax.tree.map(lambda x, i=i: jnp.asarray(x[i]), group.members.params)
            stats = group.members.obs_stats
            stats = None if stats is None else jax.tree.map(lambda x, i=i: x[i], stats)
            rows.append(
                member_report(group.agent, group.algo, params, stats, env, env_params, args.states)
            )
        print(strict_json.dumps({"run_dir": run_dir, "agent": cfg.agent.name, "members": rows}))


if __name__ == "__main__":
    main()
