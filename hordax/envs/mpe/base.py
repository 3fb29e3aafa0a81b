"""``ParticleWorld``: what every MPE scenario shares (teams, spaces, reset, step, render).

A scenario subclass declares its teams and landmarks and implements three pure functions of
the state: ``team_observations`` (one ``f32[count, d]`` array per team, PettingZoo's order),
``reward`` (``f32[n]``) and, optionally, ``sample_goal`` (its random choices at reset) and
``info_terms`` (metrics and named reward terms). The physics is :mod:`hordax.envs.mpe.world`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from hordax.envs.core import MultiAgentEnvironment, check_time_limit
from hordax.envs.mpe import world
from hordax.envs.mpe.render import draw
from hordax.envs.mpe.world import MPEParams, MPEState
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.clip import clip_action

Color = tuple[float, float, float]


@dataclasses.dataclass(frozen=True)
class Team:
    """One agent type of a scenario; its agents are contiguous on the agent axis and are
    named ``f"{name}_{i}"`` (PettingZoo's names).

    Attributes:
        name: the team (and agent name prefix), e.g. ``"adversary"``.
        count: number of agents.
        size: radius.
        movable, silent, collide: PettingZoo's entity flags.
        accel: force per unit of move action (PettingZoo's sensitivity, default 5).
        max_speed: speed cap (``inf``: none).
        color: RGB in ``[0, 1]`` for ``render``.
    """

    name: str
    count: int
    size: float
    movable: bool = True
    silent: bool = True
    collide: bool = False
    accel: float = world.DEFAULT_ACCEL
    max_speed: float = math.inf
    color: Color = (0.25, 0.25, 0.25)


@dataclasses.dataclass(frozen=True)
class Landmarks:
    """A group of landmarks (fixed entities), drawn uniformly in ``[-spawn, spawn]^2``."""

    count: int
    size: float = 0.05
    collide: bool = False
    spawn: float = 1.0
    color: Color = (0.75, 0.75, 0.75)


def check_count(name: str, value: Any, low: int) -> int:
    """A constructor's agent/landmark count: an int ``>= low``, else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name}={value!r}: must be an integer >= {low}")
    return int(value)


class ParticleWorld(MultiAgentEnvironment[MPEState, MPEParams]):
    """Base of the MPE scenarios (PettingZoo MPE's world, arrays with an agent axis).

    - observation ``f32[n, D]``: agent ``i``'s own observation (``d_i`` values, PettingZoo's
      order) then zeros up to ``D = max d_i``; ``agent_observation_space(i)`` is its own
      ``Box(-inf, inf, (d_i,))``.
    - action: discrete ``MultiDiscrete(nvec)`` (``int32[n]``, PettingZoo's ``Discrete``
      sizes: 5 to move, ``dim_c`` to talk, ``5 dim_c`` to do both as ``move + 5 word``) or,
      with ``continuous_actions=True``, ``f32[n, A]`` in ``[0, 1]`` (PettingZoo's layout, see
      :mod:`hordax.envs.mpe.world`; an agent ignores entries past its own width).
      Out-of-range actions are clipped; NaN entries act as 0.5 (the midpoint).
    - reward ``f32[n]``: the scenario's.
    - termination: never (``terminated`` is always False; every agent stays active:
      ``info["agent_mask"]`` all True, ``info["agent_terminated"]`` all False).
    - truncation: ``time >= params.max_steps_in_episode`` (25 by default, ``max_cycles``).
    - params: :class:`~hordax.envs.mpe.world.MPEParams` (physics, sizes, masses, accel, max
      speed; scenarios with a blended reward add ``local_ratio``; a world where nothing moves
      has :class:`~hordax.envs.mpe.world.TalkParams`, the episode length only).
    - state: :class:`~hordax.envs.mpe.world.MPEState`.
    - critic observation ``f32[n, C]``: every agent's own observation concatenated
      (PettingZoo's ``state()``), the same row for every agent.
    """

    #: ``G``: how many random choices (goal landmarks, keys) ``sample_goal`` draws.
    num_goals: int = 0

    def __init__(
        self,
        teams: Sequence[Team],
        landmarks: Sequence[Landmarks],
        dim_c: int,
        continuous_actions: bool = False,
    ):
        super().__init__()
        if not isinstance(continuous_actions, bool | np.bool_):
            raise ValueError(f"continuous_actions={continuous_actions!r}: must be a bool")
        self.teams = tuple(teams)
        self.landmark_groups = tuple(landmarks)
        self.continuous_actions = bool(continuous_actions)
        per_agent = [t for t in self.teams for _ in range(t.count)]
        per_landmark = [g for g in self.landmark_groups for _ in range(g.count)]
        self.layout = world.Layout(
            movable=np.array([t.movable for t in per_agent], bool),
            silent=np.array([t.silent for t in per_agent], bool),
            agent_collide=np.array([t.collide for t in per_agent], bool),
            landmark_collide=np.array([g.collide for g in per_landmark], bool),
            dim_c=int(dim_c),
        )
        self._names = [f"{t.name}_{i}" for t in self.teams for i in range(t.count)]
        self._team_index = tuple(k for k, t in enumerate(self.teams) for _ in range(t.count))
        self._spawn = np.array([g.spawn for g in per_landmark], np.float32).reshape(-1, 1)
        self._agent_defaults = per_agent
        self._landmark_defaults = per_landmark
        if self.continuous_actions and min(self.layout.continuous_actions()) == 0:
            raise ValueError("every agent must move or talk to have a continuous action")

    # -- identity: equal configurations share compiled programs -------------------------------

    def _config(self) -> tuple:
        return (
            type(self),
            self.teams,
            self.landmark_groups,
            self.layout.dim_c,
            self.continuous_actions,
        )

    def __eq__(self, other: object) -> bool:
        """Envs built with the same configuration are interchangeable (jit static args)."""
        return isinstance(other, ParticleWorld) and self._config() == other._config()

    def __hash__(self) -> int:
        return hash(self._config())

    # -- agents and teams ----------------------------------------------------------------------

    @property
    def num_agents(self) -> int:
        return len(self._names)

    @property
    def num_landmarks(self) -> int:
        return len(self._landmark_defaults)

    @property
    def agents(self) -> list[str]:
        return list(self._names)

    @property
    def team_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.teams)

    @property
    def team_index(self) -> tuple[int, ...]:
        return self._team_index

    # -- what a scenario implements -------------------------------------------------------------

    def team_observations(self, state: MPEState, params: MPEParams) -> list[jax.Array]:
        """One ``f32[count, d]`` array per team (in team order), PettingZoo's observation."""
        raise NotImplementedError

    def reward(self, state: MPEState, params: MPEParams) -> jax.Array:
        """``f32[n]`` rewards after a step (``state`` is the new state)."""
        raise NotImplementedError

    def sample_goal(self, key: jax.Array) -> jax.Array:
        """``i32[num_goals]`` the scenario's random choices at reset (none by default)."""
        return jnp.zeros((self.num_goals,), jnp.int32)

    def info_terms(
        self, state: MPEState, params: MPEParams
    ) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
        """``(metrics, reward_terms)`` of the new state: ``f32[]`` or ``f32[n]`` leaves."""
        return {}, {}

    def entity_colors(self, state: MPEState) -> np.ndarray:
        """``f32[n + L, 3]`` RGB in ``[0, 1]`` of agents then landmarks, for ``render``."""
        return np.array(
            [t.color for t in self._agent_defaults] + [g.color for g in self._landmark_defaults],
            np.float32,
        ).reshape(-1, 3)

    # -- params ---------------------------------------------------------------------------------

    @property
    def default_params(self) -> MPEParams:
        agents, marks = self._agent_defaults, self._landmark_defaults
        f32 = functools.partial(jnp.asarray, dtype=jnp.float32)
        return MPEParams(
            agent_size=f32([t.size for t in agents]),
            landmark_size=f32([g.size for g in marks]).reshape(len(marks)),
            mass=jnp.ones(len(agents), jnp.float32),
            accel=f32([t.accel for t in agents]),
            max_speed=f32([t.max_speed for t in agents]),
        )

    def validate_params(self, params: MPEParams) -> None:
        """Host-side ranges; ``ValueError`` naming the field, the value and what is allowed."""
        check_time_limit(params)
        rules = [
            ("dt", lambda x: x > 0, "must be > 0"),
            ("damping", lambda x: (x >= 0) & (x <= 1), "must be in [0, 1]"),
            ("contact_force", lambda x: x >= 0, "must be >= 0"),
            ("contact_margin", lambda x: x > 0, "must be > 0"),
            ("agent_size", lambda x: x > 0, "every entry must be > 0"),
            ("landmark_size", lambda x: x > 0, "every entry must be > 0"),
            ("mass", lambda x: x > 0, "every entry must be > 0"),
            ("accel", lambda x: x >= 0, "every entry must be >= 0"),
            ("max_speed", lambda x: x > 0, "every entry must be > 0 (inf: no cap)"),
        ]
        if hasattr(params, "local_ratio"):  # scenarios with a shared reward
            rules.append(("local_ratio", lambda x: (x >= 0) & (x <= 1), "must be in [0, 1]"))
        for name, check, rule in rules:
            if not hasattr(params, name):  # TalkParams: no physics
                continue
            value = np.asarray(getattr(params, name))
            if not np.all(check(value)) or np.any(np.isnan(value)):
                raise ValueError(f"params.{name}={value.tolist()}: {rule}")

    # -- spaces ---------------------------------------------------------------------------------

    @functools.cached_property
    def _obs_sizes(self) -> tuple[int, ...]:
        """``d_t`` of each team, from the shapes ``team_observations`` traces to."""
        n, num_marks, dim_c = self.num_agents, self.num_landmarks, self.layout.dim_c
        dummy = MPEState(
            time=jnp.int32(0),
            pos=jnp.zeros((n, 2)),
            vel=jnp.zeros((n, 2)),
            landmarks=jnp.zeros((num_marks, 2)),
            comm=jnp.zeros((n, dim_c)),
            goal=jnp.zeros((self.num_goals,), jnp.int32),
        )
        shapes = jax.eval_shape(self.team_observations, dummy, self.default_params)
        counts = [t.count for t in self.teams]
        if [s.shape[0] for s in shapes] != counts:
            raise TypeError(f"team_observations rows {[s.shape for s in shapes]} != {counts}")
        return tuple(int(s.shape[1]) for s in shapes)

    def agent_obs_size(self, i: int) -> int:
        """``d_i``: the length of agent ``i``'s own observation."""
        return self._obs_sizes[self._team_index[i]]

    def observation_space(self, params: MPEParams) -> spaces.Box:
        width = max(self._obs_sizes)
        return spaces.Box(-jnp.inf, jnp.inf, (self.num_agents, width), jnp.float32)

    def agent_observation_space(self, i: int, params: MPEParams) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, (self.agent_obs_size(i),), jnp.float32)

    def action_space(self, params: MPEParams) -> MultiDiscrete | spaces.Box:
        if self.continuous_actions:
            width = max(self.layout.continuous_actions())
            return spaces.Box(0.0, 1.0, (self.num_agents, width), jnp.float32)
        return MultiDiscrete(self.layout.discrete_actions())

    def agent_action_space(self, i: int, params: MPEParams) -> spaces.Discrete | spaces.Box:
        if self.continuous_actions:
            return spaces.Box(0.0, 1.0, (self.layout.continuous_actions()[i],), jnp.float32)
        return spaces.Discrete(self.layout.discrete_actions()[i])

    def critic_observation_space(self, params: MPEParams) -> spaces.Box:
        total = sum(d * t.count for d, t in zip(self._obs_sizes, self.teams, strict=True))
        return spaces.Box(-jnp.inf, jnp.inf, (self.num_agents, total), jnp.float32)

    # -- reset, step, observations --------------------------------------------------------------

    def reset_env(self, key: jax.Array, params: MPEParams) -> tuple[jax.Array, MPEState]:
        """Agents uniform in ``[-1, 1]^2``, landmarks in ``[-spawn, spawn]^2``, at rest, silent;
        the scenario's goals from ``sample_goal``. Every episode is a fresh draw."""
        key_agents, key_landmarks, key_goal = jax.random.split(key, 3)
        n, spawn = self.num_agents, self._spawn
        state = MPEState(
            time=jnp.int32(0),
            pos=jax.random.uniform(key_agents, (n, 2), jnp.float32, -1.0, 1.0),
            vel=jnp.zeros((n, 2), jnp.float32),
            landmarks=jax.random.uniform(
                key_landmarks, (self.num_landmarks, 2), jnp.float32, -spawn, spawn
            ),
            comm=jnp.zeros((n, self.layout.dim_c), jnp.float32),
            goal=self.sample_goal(key_goal).astype(jnp.int32),
        )
        return self.observe(state, params), state

    def step_env(
        self, key: jax.Array, state: MPEState, action: jax.Array, params: MPEParams
    ) -> tuple[jax.Array, MPEState, jax.Array, jax.Array, dict]:
        action = clip_action(action, self.action_space(params))
        state = world.step_world(state, action, params, self.layout, self.continuous_actions)
        metrics, terms = self.info_terms(state, params)
        n = self.num_agents
        info = {
            "metrics": metrics,
            "reward_terms": terms,
            "agent_terminated": jnp.zeros(n, bool),
            "agent_mask": jnp.ones(n, bool),
        }
        reward = self.reward(state, params).astype(jnp.float32)
        return self.observe(state, params), state, reward, jnp.array(False), info

    def observe(self, state: MPEState, params: MPEParams) -> jax.Array:
        """``f32[n, D]``: each team's observation, zero-padded to ``D``, teams stacked."""
        width = max(self._obs_sizes)
        parts = self.team_observations(state, params)
        return jnp.concatenate(
            [jnp.pad(p, ((0, 0), (0, width - p.shape[1]))) for p in parts]
        ).astype(jnp.float32)

    def critic_observation(self, state: MPEState, params: MPEParams) -> jax.Array:
        """``f32[n, C]``: all agents' own observations concatenated in agent order (PettingZoo's
        ``state()``, JaxMARL MAPPO's world state), the same for every agent."""
        flat = jnp.concatenate([p.reshape(-1) for p in self.team_observations(state, params)])
        return jnp.broadcast_to(flat.astype(jnp.float32), (self.num_agents, flat.shape[0]))

    def render(self, state: MPEState, params: MPEParams) -> np.ndarray:
        """``uint8[128, 128, 3]`` top-down view: agents and landmarks as discs of their radii."""
        pos = np.concatenate([np.asarray(state.pos), np.asarray(state.landmarks)])
        sizes = getattr(params, "agent_size", None), getattr(params, "landmark_size", None)
        if sizes[0] is None:  # TalkParams: the scenario's fixed sizes
            sizes = (
                [t.size for t in self._agent_defaults],
                [g.size for g in self._landmark_defaults],
            )
        size = np.concatenate([np.asarray(sizes[0]), np.asarray(sizes[1])])
        return draw(pos, size, self.entity_colors(state), num_agents=self.num_agents)
