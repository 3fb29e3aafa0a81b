"""Multi-agent training on the agent-axis protocol (``docs/env_protocol.md``, "Multi agent"):
teams of agents with their own parameters, the agent axis folded into the batch.

A multi-agent env steps ``[B, n]`` agents. :class:`TeamAgent` puts a single-agent learner
(e.g. :class:`~hordax.agents.ppo.PPOAgent`) behind every team of the env's static
``team_index``: team ``k``'s agents share its parameters (parameter sharing, IPPO), read
their own unpadded observation ``obs[..., :d_k]`` (plus an optional agent-id one-hot) and
act in their own per-agent action space (a ``MultiDiscrete`` stack gives each team a
``Discrete`` head). The trainer's rollout, GAE and update code is the single-agent one: the
team agent looks like one agent whose observations and outputs carry the agent axis, and its
``update`` takes one row batch per team (``[T * B * n_k]`` rows, masked).

The agent state is the members' state type with one entry per team in ``params`` and
``opt_state`` (``{team_name: ...}``) and one ``hparams``/``step`` (teams are updated in the
same update, so their step counters agree): populations vary ``hparams`` as for one agent,
and a saved agent's ``params`` are ``{team_name: {"actor", "critic"}}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from hordax.envs.spaces import MultiDiscrete


@dataclass(frozen=True)
class Team:
    """One team of a multi-agent env (all static).

    Attributes:
        name: the env's team name.
        slots: ``int[n_k]`` the team's agent slots (ascending).
        obs_dim: the team's unpadded observation size ``d_k``.
        action_space: one agent's action space (``Discrete`` or ``Box``).
    """

    name: str
    slots: np.ndarray
    obs_dim: int
    action_space: Any


def env_teams(env: Any, params: Any) -> tuple[Team, ...]:
    """The teams of a (raw or wrapped) multi-agent env, in ``team_names`` order; teams with
    no agent slot are left out."""
    inner = env.unwrapped if hasattr(env, "unwrapped") else env
    index = np.asarray(inner.team_index)
    teams = []
    for k, name in enumerate(inner.team_names):
        slots = np.nonzero(index == k)[0]
        if slots.size == 0:
            continue
        first = int(slots[0])
        obs_space = inner.agent_observation_space(first, params)
        teams.append(
            Team(
                str(name),
                slots,
                int(np.prod(obs_space.shape)),
                inner.agent_action_space(first, params),
            )
        )
    return tuple(teams)


class TeamAgent:
    """Per-team learners over a multi-agent env's agent axis (see the module docstring).

    Args:
        agents: ``{team_name: agent}``, single-agent learners built for the team's input
            shape and action space (:meth:`input_shape`).
        teams: the env's teams (:func:`env_teams`).
        num_agents: the env's agent slots ``n``.
        action_space: the env's stacked action space (``MultiDiscrete`` or ``Box[n, A]``).
        agent_id: append the agent's one-hot slot id (``n`` entries) to its actor (and
            critic) input.
        team_hparams: ``{team_name: {hparam: value}}``, fixed per-team values of traced
            hyperparameters (e.g. ``ent_coef``) that replace the shared ``hparams`` entry in
            that team's update.
    """

    recurrent = False

    def __init__(
        self,
        agents: dict[str, Any],
        teams: tuple[Team, ...],
        num_agents: int,
        action_space: Any,
        agent_id: bool = False,
        team_hparams: dict[str, dict[str, float]] | None = None,
    ):
        self.agents, self.teams = agents, teams
        self.team_hparams = dict(team_hparams or {})
        self.num_agents, self.action_space, self.agent_id = num_agents, action_space, agent_id
        self._discrete = isinstance(action_space, MultiDiscrete)
        if not self._discrete and not isinstance(action_space, spaces.Box):
            raise TypeError(f"multi-agent PPO needs MultiDiscrete or Box[n, A], got {action_space}")

    @staticmethod
    def input_shape(team: Team, num_agents: int, agent_id: bool, critic_dim: int | None) -> Any:
        """The single-agent observation shape of ``team``'s learner: ``(d_k [+ n],)``, or
        ``{"actor": ..., "critic": (C [+ n],)}`` with a critic observation of size ``C``."""
        extra = num_agents if agent_id else 0
        actor = (team.obs_dim + extra,)
        if critic_dim is None:
            return actor
        return {"actor": actor, "critic": (critic_dim + extra,)}

    # --- the agent axis <-> team rows -----------------------------------------------------
    def _inputs(self, obs: Any, team: Team) -> Any:
        """Team rows of ``obs`` (``[..., n, D]`` or an ``{"actor", "critic"}`` pair):
        ``[R, d_k (+ n)]`` with ``R`` = leading size x ``n_k``."""

        def one(x: jax.Array, width: int | None) -> jax.Array:
            x = x[..., team.slots, :width]
            if self.agent_id:
                ids = jnp.eye(self.num_agents, dtype=x.dtype)[team.slots]
                x = jnp.concatenate([x, jnp.broadcast_to(ids, (*x.shape[:-1], ids.shape[-1]))], -1)
            return x.reshape((-1, x.shape[-1]))

        if isinstance(obs, dict):
            return {"actor": one(obs["actor"], team.obs_dim), "critic": one(obs["critic"], None)}
        return one(obs, team.obs_dim)

    def _lead(self, obs: Any) -> tuple[int, ...]:
        x = obs["actor"] if isinstance(obs, dict) else obs
        return tuple(x.shape[:-2])

    def _member(self, state: Any, team: Team) -> Any:
        opt = state.opt_state[team.name] if state.opt_state is not None else None
        hparams = state.hparams
        if team.name in self.team_hparams:
            fixed = {k: jnp.float32(v) for k, v in self.team_hparams[team.name].items()}
            hparams = {**hparams, **fixed}
        return state.replace(params=state.params[team.name], opt_state=opt, hparams=hparams)

    def _assemble(self, lead: tuple[int, ...], parts: dict[str, jax.Array], dtype: Any) -> Any:
        """Per-agent ``[...]`` values of every team (``parts[name] [R_k, ...]``) in their
        slots: ``[*lead, n, ...]``; an agent's ``Box`` action is zero-padded to ``A``."""
        first = next(iter(parts.values()))
        tail = first.shape[1:]
        if tail and not self._discrete:  # Box actions: pad each team to the stack's width
            tail = tuple(self.action_space.shape[1:])
        out = jnp.zeros((*lead, self.num_agents, *tail), dtype)
        for team in self.teams:
            p = parts[team.name].reshape((*lead, len(team.slots), *parts[team.name].shape[1:]))
            if p.ndim > len(lead) + 1:
                out = out.at[..., team.slots, : p.shape[-1]].set(p.astype(dtype))
            else:
                out = out.at[..., team.slots].set(p.astype(dtype))
        return out

    # --- the agent interface ----------------------------------------------------------------
    def init(self, key: jax.Array) -> Any:
        keys = jax.random.split(key, len(self.teams))
        states = {
            t.name: self.agents[t.name].init(k) for t, k in zip(self.teams, keys, strict=True)
        }
        first = next(iter(states.values()))
        return first.replace(
            params={k: s.params for k, s in states.items()},
            opt_state={k: s.opt_state for k, s in states.items()},
        )

    def act(self, state: Any, obs: Any, key: jax.Array) -> tuple[jax.Array, dict]:
        """``obs [B, n, ...]`` -> ``(action [B, n, ...], {"log_prob", "value"} [B, n])``."""
        lead, actions, extras = self._lead(obs), {}, {}
        for team, k in zip(self.teams, jax.random.split(key, len(self.teams)), strict=True):
            a, ex = self.agents[team.name].act(
                self._member(state, team), self._inputs(obs, team), k
            )
            actions[team.name] = a
            for name, v in ex.items():
                extras.setdefault(name, {})[team.name] = v
        dtype = jnp.int32 if self._discrete else jnp.float32
        action = self._assemble(lead, actions, dtype)
        return action, {n: self._assemble(lead, v, jnp.float32) for n, v in extras.items()}

    def act_greedy(self, state: Any, obs: Any) -> jax.Array:
        lead = self._lead(obs)
        parts = {
            t.name: self.agents[t.name].act_greedy(self._member(state, t), self._inputs(obs, t))
            for t in self.teams
        }
        return self._assemble(lead, parts, jnp.int32 if self._discrete else jnp.float32)

    def value(self, state: Any, obs: Any) -> jax.Array:
        """``V [..., n]`` of every agent (its team's critic)."""
        parts = {
            t.name: self.agents[t.name].value(self._member(state, t), self._inputs(obs, t))
            for t in self.teams
        }
        return self._assemble(self._lead(obs), parts, jnp.float32)

    def batches(self, seq: dict[str, Any], mask: jax.Array, make_batch: Any) -> dict[str, Any]:
        """One row batch per team from per-agent rollout arrays ``seq`` (``obs [T, B, n, ...]``
        and ``action``, ``log_prob``, ``value``, ``advantage``, ``target`` ``[T, B, n, ...]``)
        and ``mask bool[T, B, n]``: ``make_batch(**fields, mask=...)`` per team."""
        out = {}
        for team in self.teams:
            fields = {"obs": self._inputs(seq["obs"], team)}
            if self._discrete:
                fields["action"] = seq["action"][..., team.slots].reshape(-1)
            else:
                a_k = int(np.prod(team.action_space.shape))
                fields["action"] = seq["action"][..., team.slots, :a_k].reshape((-1, a_k))
            for f in ("log_prob", "value", "advantage", "target"):
                fields[f] = seq[f][..., team.slots].reshape(-1)
            out[team.name] = make_batch(**fields, mask=mask[..., team.slots].reshape(-1))
        return out

    def update(self, state: Any, batches: dict[str, Any], key: jax.Array) -> tuple[Any, dict]:
        """Each team's own update on its own rows (its own gradient clipping and optimizer
        moments: one team's data never moves another team's parameters). Metrics: means over
        teams; ``loss`` and ``grad_norm`` summed (the NaN guard sees any team's)."""
        params, opt, metrics = {}, {}, []
        new = state
        for team, k in zip(self.teams, jax.random.split(key, len(self.teams)), strict=True):
            new, m = self.agents[team.name].update(self._member(state, team), batches[team.name], k)
            params[team.name], opt[team.name] = new.params, new.opt_state
            metrics.append(m)
        out = {k: jnp.mean(jnp.stack([m[k] for m in metrics])) for k in metrics[0]}
        for k in ("loss", "grad_norm"):
            out[k] = jnp.sum(jnp.stack([m[k] for m in metrics]))
        # The shared hparams, not the last team's (which may carry its team_hparams).
        return new.replace(params=params, opt_state=opt, hparams=state.hparams), out
