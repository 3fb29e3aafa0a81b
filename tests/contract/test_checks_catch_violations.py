"""The contract checks are not vacuous: each fails on an env broken in the way it targets.

Every broken env is ``Debug-PointMass-v0`` (or its multi-agent sibling) with one defect;
the test asserts the check aimed at that defect raises ``AssertionError`` naming it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

from hordax import testing
from hordax.envs.debug.multi_point_mass import MultiPointMass
from hordax.envs.debug.point_mass import PointMass

KEY = jax.random.key(0)


class ObsOutsideSpace(PointMass):
    def observe(self, key, state, action, params):
        return 10.0 * super().observe(key, state, action, params)


class WeakTimeAfterReset(PointMass):
    """reset gives a weakly-typed int32 time, step a strong one: the step retraces."""

    def reset_env(self, key, params):
        obs, state = super().reset_env(key, params)
        return obs, state.replace(time=jnp.asarray(0))

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state.replace(time=state.time.astype(jnp.int32)), reward, terminated, info


class NumpyRandomAtTrace(PointMass):
    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state, reward + np.float32(np.random.rand()), terminated, info


class TracedDiffersFromEager(PointMass):
    """Python-level branch on tracers: jitted and eager steps disagree."""

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        bump = 1.0 if isinstance(reward, jax.core.Tracer) else 0.0
        return obs, state, reward + bump, terminated, info


@jax.custom_batching.custom_vmap
def _slots_shifted(x):
    return x


@_slots_shifted.def_vmap
def _slots_shifted_vmap(axis_size, in_batched, x):
    """A wrong batching rule: each env gets its neighbour's value (slots mixed up)."""
    return jnp.roll(x, 1, axis=0), in_batched[0]


class BatchedDiffersFromSingle(PointMass):
    """A custom batching rule that mixes the slots up: a batched step disagrees with a
    single one (the kind of defect a hand-written vmap rule or callback can bring)."""

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state, _slots_shifted(reward), terminated, info


class IgnoresParams(PointMass):
    def reset_env(self, key, params):
        return super().reset_env(key, self.default_params)

    def step_env(self, key, state, action, params):
        return super().step_env(key, state, action, self.default_params)


class TimeLimitInTerminated(PointMass):
    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        terminated = terminated | (state.time >= params.max_steps_in_episode)
        return obs, state, reward, terminated, info


class CachedReset(PointMass):
    def reset_env(self, key, params):
        return super().reset_env(jax.random.key(7), params)


class OverridesStep(PointMass):
    """Logic in step() itself: stepping without the reset (VecEnv's pool) would skip it."""

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = super().step(key, state, action, params)
        return obs, state, reward + 1.0, terminated, truncated, info


class NaNAfterStep50(PointMass):
    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state, jnp.where(state.time > 50, jnp.nan, reward), terminated, info


class InfFromLargeActions(PointMass):
    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        vel = state.vel + jnp.where(jnp.abs(action).max() >= 1.0, jnp.inf, 0.0)
        return obs, state.replace(vel=vel), reward, terminated, info


class ExtraInfoKey(PointMass):
    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state, reward, terminated, {**info, "distance": reward}


class SummedReward(MultiPointMass):
    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, state, reward.sum(), terminated, info


class PaddingNotZero(MultiPointMass):
    """Says agent 0 sees 2 values, but fills the whole padded row."""

    def agent_observation_space(self, i, params):
        space = super().agent_observation_space(i, params)
        return space if i else spaces.Box(-jnp.inf, jnp.inf, (2,), jnp.float32)


class TeamIndexTooShort(MultiPointMass):
    @property
    def team_index(self):
        return (0,)


class LeavesSilently(MultiPointMass):
    """Agent 0 becomes inactive after its second step, ``agent_terminated`` never saying so."""

    def _gone(self, state):
        return (jnp.arange(self.num_agents) == 0) & (state.time >= 2)

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return (
            obs,
            state,
            reward,
            terminated,
            {**info, "agent_mask": self.agent_mask(state, params)},
        )

    def agent_mask(self, state, params):
        return super().agent_mask(state, params) & ~self._gone(state)


class CriticObsNotFinite(PointMass):
    def critic_observation(self, state, params):
        return jnp.full((3,), jnp.nan)

    def critic_observation_space(self, params):
        return spaces.Box(-jnp.inf, jnp.inf, (3,), jnp.float32)


class FloatFrames(PointMass):
    def render(self, state, params):
        return super().render(state, params).astype(np.float32)


CASES = [
    (ObsOutsideSpace, testing.check_spaces_and_dtypes, "reset observation is outside"),
    (WeakTimeAfterReset, testing.check_traces_once, r"\.time: ~int32\[\] after reset"),
    (NumpyRandomAtTrace, testing.check_determinism, r"run 2 vs run 1.*\.reward"),
    (TracedDiffersFromEager, testing.check_jit_matches_eager, r"step 1 \(eager vs jit\)"),
    # The one-step sizes test_env_contract.EAGER_STEP_SIZES gives the MJX families.
    (
        TracedDiffersFromEager,
        functools.partial(testing.check_jit_matches_eager, num_steps=1, max_steps=2),
        r"step 1 \(eager vs jit\)",
    ),
    # op-by-op dispatch (EAGER_STEP_SIZES's MJX setting): the env's own code runs concretely
    (
        TracedDiffersFromEager,
        functools.partial(
            testing.check_jit_matches_eager, num_steps=1, max_steps=2, eager="dispatch"
        ),
        r"step 1 \(eager vs jit\)",
    ),
    (IgnoresParams, testing.check_vmap_params, "ignore the params"),
    # the contact envs' tolerance (test_env_contract.CONTACT_IDS) still sees the defect
    (
        TracedDiffersFromEager,
        functools.partial(
            testing.check_jit_matches_eager,
            num_steps=1,
            max_steps=2,
            tol=testing.CONTACT_TOL,
            eager="dispatch",
        ),
        r"step 1 \(eager vs jit\)",
    ),
    # and the tolerance of the envs whose object lands on edges (IMPACT_IDS) too
    (
        TracedDiffersFromEager,
        functools.partial(
            testing.check_jit_matches_eager,
            num_steps=1,
            max_steps=2,
            tol=testing.IMPACT_TOL,
            eager="dispatch",
        ),
        r"step 1 \(eager vs jit\)",
    ),
    (BatchedDiffersFromSingle, testing.check_vmap_states, r"vmap step 1, env 0: leaf \[2\]"),
    (
        BatchedDiffersFromSingle,
        functools.partial(testing.check_vmap_states, tol=testing.IMPACT_TOL),
        r"vmap step 1, env 0: leaf \[2\]",
    ),
    (
        BatchedDiffersFromSingle,
        functools.partial(testing.check_vmap_params, tol=testing.IMPACT_TOL),
        r"vmap-over-params step 1, params 0: leaf \[2\]",
    ),
    (TimeLimitInTerminated, testing.check_terminal_semantics, "must not fold into terminated"),
    (CachedReset, testing.check_fresh_resets, "start in the same state"),
    (CachedReset, testing.check_batch_resets, r"4 envs reset on step 3 all start alike"),
    (OverridesStep, testing.check_batch_resets, r"overrides step\(\)"),
    (NaNAfterStep50, testing.check_finite, r"non-finite values in \[\"\['reward'\]"),
    (InfFromLargeActions, testing.check_nonfinite_actions, r"\['state'\]\.vel"),
    (ExtraInfoKey, testing.check_hordax_info, "info keys .*'distance'"),
    (SummedReward, testing.check_multi_agent, r"reward is float32\[\], want float32\[3\]"),
    (PaddingNotZero, testing.check_multi_agent, r"agent 0: observation entries past its own"),
    (TeamIndexTooShort, testing.check_multi_agent, r"team_index=\(0,\) needs 3 entries"),
    (LeavesSilently, testing.check_multi_agent, r"agent 0 was active at step 1 and inactive"),
    (CriticObsNotFinite, testing.check_critic_observation, "critic observation is not finite"),
    (FloatFrames, testing.check_render, r"got float32\[96, 96, 3\]"),
]


@pytest.mark.parametrize(("env_cls", "check", "match"), CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.slow
def test_contract_checks__catch_their_violation(env_cls, check, match):
    """The check raises AssertionError, naming the defect, on an env that has it."""
    env = env_cls()
    with pytest.raises(AssertionError, match=match):
        check(env, env.default_params, KEY)


@pytest.mark.timeout(60)
def test_check_jit_matches_eager__refuses_an_unknown_eager_mode():
    env = PointMass()
    with pytest.raises(ValueError, match="eager='trace': must be 'disable_jit' or 'dispatch'"):
        testing.check_jit_matches_eager(env, env.default_params, KEY, eager="trace")
