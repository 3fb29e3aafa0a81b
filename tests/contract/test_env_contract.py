"""The env contract (style.md section 7) for every hordax id and the gymnax ids hordax trains on.

A new env passes it just by being registered. The checks live in :mod:`hordax.testing`; each
test here runs one of them per env id. One ``(env, params)`` per id is shared by all tests, so
each jitted program compiles once per env.

Known violations (by gymnax envs) are listed in ``KNOWN_VIOLATIONS`` and marked
``xfail(strict=True)``: the day one is fixed, its test fails and the entry goes.
``SKIPPED_CHECKS`` lists checks that cannot run on an env within a test's time (none now).
"""

from __future__ import annotations

import functools

import jax
import pytest

import hordax
from hordax import testing
from hordax.envs.core import has_critic_observation, is_multi_agent
from hordax.envs.registry import entry_point

EVERY_HORDAX_ID = sorted(hordax.registered_envs())
GYMNAX_IDS = ["CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCarContinuous-v0"]


def _one_per_class(ids: list[str]) -> list[str]:
    """The first registered id of each env class: ids that only change a constructor size or
    flag of the same class (Grid-Empty-5x5 .. 16x16, Memory-S8 .. S64) run the same code, so
    the full suite runs once per class and every id gets :func:`test_contract__every_id_steps`."""
    seen: dict[str, str] = {}
    for env_id in hordax.registered_envs():  # registration order: the smallest variant first
        seen.setdefault(entry_point(env_id) or env_id, env_id)
    return sorted(i for i in seen.values() if i in ids)


HORDAX_IDS = _one_per_class(EVERY_HORDAX_ID)
ALL_IDS = HORDAX_IDS + GYMNAX_IDS

_WEAK_STATE = (
    "gymnax {env}: reset_env builds state.{leaf} as a weakly-typed float32 (jnp.array(0.0)) "
    "but step_env returns a strong float32, so a jitted step retraces on its second call"
)
#: (check, env id) -> reason. Each is a genuine violation by the env, not by hordax.
KNOWN_VIOLATIONS = {
    ("traces_once", "Pendulum-v1"): _WEAK_STATE.format(env="Pendulum-v1", leaf="last_u"),
    ("traces_once", "MountainCarContinuous-v0"): _WEAK_STATE.format(
        env="MountainCarContinuous-v0", leaf="velocity"
    ),
}
#: (check, env id) -> reason: checks that cannot run on an env in the time a test has.
SKIPPED_CHECKS: dict[tuple[str, str], str] = {}
#: (check, env id) -> seconds: checks that need more than the suite's 600 s timeout (none
#: since the MJX eager checks run op by op, EAGER_STEP_SIZES: the Shadow Hand's took up to
#: 200 s on an AVX-512 2-core host and past 600 s on a loaded AVX2 one under disable_jit).
LONG_CHECKS: dict[tuple[str, str], int] = {}


#: The everyday tier (``python -m pytest -m "not slow"``) runs every check on one env class
#: per family and kind (single-agent box and discrete actions, multi-agent, gymnax); the
#: other classes' checks, and :func:`test_contract__every_id_steps` of their ids, are marked
#: ``slow``: the full tier (``python -m pytest``, CI's command) runs them all.
EVERYDAY_IDS = frozenset(
    {
        "Debug-PointMass-v0",
        "Debug-MultiPointMass-v0",
        "CartPole-v1",
        "Pendulum-v1",
        "Grid-Empty-5x5-v0",
        "Aerial-Hover-v0",
        "MPE-SimpleTag-v0",
        "Drive-GPUDriveJSON-v0",
        "StockTrading-v0",
    }
)
EVERYDAY_CLASSES = frozenset(entry_point(i) or i for i in EVERYDAY_IDS)
#: Families whose contract runs in the full tier only (their own tests run every day).
FULL_TIER_FAMILIES = {
    "manipulation": "MJX on 2 CPU cores: each id's contract takes minutes of one core on an "
    "AVX-512 host (Reach 152 s, Push 216 s, the sphere 326 s, the cube 404 s; the cube's vmap "
    "checks 102-138 s, its op-by-op eager check 67-90 s; RESULTS 36)",
}
#: Families whose eager (``jax.disable_jit``) step costs minutes: jit_matches_eager runs
#: their eager side in JAX's op-by-op mode (``eager="dispatch"``: hordax's env code on
#: concrete arrays, MJX's substep scan compiled as one unit) and compares the reset and ONE
#: step (``max_steps=2``: the step continues the episode, so the stepped state itself is
#: compared; the in-step reset it selects against is the same ``reset_env`` the first
#: comparison covers), instead of a reset and 4 steps through two auto-resets. Under
#: ``disable_jit`` MJX's scans run as ~80k Python-level dispatches per step: the check took
#: 200 s (cube), 150 s (sphere), 129 s (Push), 62 s (Reach) on 2 cores (RESULTS 35).
#: ``tests/contract/test_checks_catch_violations.py`` runs these settings too.
EAGER_STEP_SIZES = {"manipulation": {"num_steps": 1, "max_steps": 2, "eager": "dispatch"}}
#: Envs with contact physics: their batched-vs-single and jit-vs-eager float comparisons use
#: ``testing.CONTACT_TOL`` (1e-3; stiff contacts amplify last-ulp differences between two
#: XLA programs of the same step, measured up to 5.2e-5, see its docstring); every other
#: check, and every other env, keeps 1e-5.
CONTACT_IDS = frozenset({"Manip-Push-v0", "Manip-HandSphereRotate-v0", "Manip-HandCubeRotateZ-v0"})


#: Envs whose object lands on edges and corners: ``testing.IMPACT_TOL`` (1e-2) instead. The
#: cube's batched and single programs in float32 part by up to 3.5e-3 rad/s on 0.64 rad/s
#: within 4 steps; in float64 they agree to 1e-12 over 6 steps
#: (``python benchmarks/manip_cube_programs.py [--x64] [--params]``, RESULTS 34).
IMPACT_IDS = frozenset({"Manip-HandCubeRotateZ-v0"})


def _tol(env_id: str) -> dict | None:
    if env_id in IMPACT_IDS:
        return testing.IMPACT_TOL
    return testing.CONTACT_TOL if env_id in CONTACT_IDS else None


def _family(env_id: str) -> str:
    """The family of a hordax id (``hordax.envs.<family>``), "" for gymnax's own ids."""
    ep = entry_point(env_id) or ""
    return ep.split(".")[2] if ep.startswith("hordax.envs.") else ""


def _marks(check: str, env_id: str, everyday: bool) -> list:
    marks = [] if everyday else [pytest.mark.slow]
    if (check, env_id) in LONG_CHECKS:
        marks.append(pytest.mark.timeout(LONG_CHECKS[(check, env_id)]))
    if (check, env_id) in SKIPPED_CHECKS:
        marks.append(pytest.mark.skip(reason=SKIPPED_CHECKS[(check, env_id)]))
    if (check, env_id) in KNOWN_VIOLATIONS:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_VIOLATIONS[(check, env_id)]))
    return marks


def _ids(check: str, ids: list[str]) -> list:
    """``ids`` as pytest params: a known violation marked ``xfail(strict=True)``, a class
    outside :data:`EVERYDAY_IDS` marked ``slow``."""
    return [
        pytest.param(env_id, marks=_marks(check, env_id, env_id in EVERYDAY_IDS)) for env_id in ids
    ]


@functools.cache
def _make(env_id: str):
    return hordax.make(env_id)


KEY = jax.random.key(0)


@pytest.mark.parametrize("env_id", _ids("traces_once", ALL_IDS))
def test_contract__traces_once(env_id):
    """jit(assert_max_traces(reset/step, n=1)) holds over new keys and chained states."""
    testing.check_traces_once(*_make(env_id), KEY)


@pytest.mark.parametrize("env_id", _ids("spaces_and_dtypes", ALL_IDS))
def test_contract__spaces_and_dtypes(env_id):
    """Obs/actions in their spaces (contains asserted, shape/dtype); reward/flags/time/info."""
    testing.check_spaces_and_dtypes(*_make(env_id), KEY)


@pytest.mark.parametrize("env_id", _ids("determinism", ALL_IDS))
def test_contract__determinism(env_id):
    """Same key gives a bitwise-identical 200-step trajectory from two separate traces."""
    testing.check_determinism(*_make(env_id), KEY)


@pytest.mark.parametrize("env_id", _ids("jit_matches_eager", ALL_IDS))
def test_contract__jit_matches_eager(env_id):
    """Jitted reset/step equal the eager ones under jax.disable_jit (atol 1e-5), incl. reset
    (4 steps through two auto-resets). The families of EAGER_STEP_SIZES compare 1 step, eager
    in JAX's op-by-op mode; contact envs at CONTACT_TOL or IMPACT_TOL (``_tol``)."""
    sizes = EAGER_STEP_SIZES.get(_family(env_id), {})
    testing.check_jit_matches_eager(*_make(env_id), KEY, tol=_tol(env_id), **sizes)


@pytest.mark.parametrize("env_id", _ids("vmap_states", ALL_IDS))
def test_contract__vmap_states(env_id):
    """vmap(step) over 4 keys/states equals 4 separate calls (through an auto-reset)."""
    testing.check_vmap_states(*_make(env_id), KEY, tol=_tol(env_id))


@pytest.mark.parametrize("env_id", _ids("vmap_params", ALL_IDS))
def test_contract__vmap_params(env_id):
    """vmap over 4 different params (float leaves x(1 + 0.05 i)) equals 4 un-vmapped calls."""
    testing.check_vmap_params(*_make(env_id), KEY, tol=_tol(env_id))


@pytest.mark.parametrize("env_id", _ids("terminal_semantics", ALL_IDS))
def test_contract__terminal_semantics(env_id):
    """max_steps=5: truncation, auto-reset to time 0, final_observation == step_env obs."""
    testing.check_terminal_semantics(*_make(env_id), KEY)


@pytest.mark.parametrize("env_id", _ids("fresh_resets", ALL_IDS))
def test_contract__fresh_resets(env_id):
    """Consecutive episodes in one slot start in different states (no cached reset)."""
    env, params = _make(env_id)
    if not getattr(env, "random_reset", True):
        pytest.skip(f"{env_id}: random_reset is False (deterministic initial state)")
    testing.check_fresh_resets(env, params, KEY)


@pytest.mark.parametrize("env_id", _ids("batch_resets", ALL_IDS))
def test_contract__batch_resets(env_id):
    """VecEnv(4 envs, reset_pool=1) over 8 steps with max_steps=3 (every env truncates at
    once: overflow rounds) equals in-step resets (floats to 1e-5; contact envs at ``_tol``);
    the burst's starts differ."""
    testing.check_batch_resets(*_make(env_id), KEY, tol=_tol(env_id))


@pytest.mark.parametrize("env_id", _ids("finite", ALL_IDS))
def test_contract__finite(env_id):
    """obs, state and reward stay finite over a 200-step random-action episode."""
    testing.check_finite(*_make(env_id), KEY)


@pytest.mark.parametrize("env_id", _ids("hordax_info", HORDAX_IDS))
def test_contract__hordax_info(env_id):
    """info holds exactly metrics/reward_terms (float32 leaves) and gymnax's three keys."""
    testing.check_hordax_info(*_make(env_id), KEY)


@pytest.mark.parametrize("env_id", _ids("nonfinite_actions", ALL_IDS))
def test_contract__nonfinite_actions(env_id):
    """NaN/inf/huge actions through ClipAction keep obs/state/reward finite and obs in space."""
    env, params = _make(env_id)
    if not testing.has_box_actions(env, params):
        pytest.skip(f"{env_id}: discrete actions")
    testing.check_nonfinite_actions(env, params, KEY)


@pytest.mark.parametrize("env_id", _ids("nonfinite_actions_unwrapped", HORDAX_IDS))
def test_contract__nonfinite_actions_unwrapped(env_id):
    """hordax envs handle NaN/inf actions themselves (no wrapper): finite, obs in space."""
    env, params = _make(env_id)
    if not testing.has_box_actions(env, params):
        pytest.skip(f"{env_id}: discrete actions")
    testing.check_nonfinite_actions(env, params, KEY, wrap=False)


@pytest.mark.parametrize("env_id", _ids("critic_observation", HORDAX_IDS))
def test_contract__critic_observation(env_id):
    """An env's optional critic observation lies in its space along a rollout (single-agent
    envs here; multi-agent ones in test_contract__multi_agent)."""
    env, params = _make(env_id)
    if not has_critic_observation(env) or is_multi_agent(env):
        pytest.skip(f"{env_id}: no single-agent critic observation")
    testing.check_critic_observation(env, params, KEY)


@pytest.mark.parametrize("env_id", _ids("multi_agent", HORDAX_IDS))
def test_contract__multi_agent(env_id):
    """Leading agent axis on obs/action, reward (n,), scalar flags, agent_mask/terminated (n,)."""
    env, params = _make(env_id)
    if not is_multi_agent(env):
        pytest.skip(f"{env_id}: single agent")
    testing.check_multi_agent(env, params, KEY)


@pytest.mark.parametrize("env_id", _ids("render", ALL_IDS))
def test_contract__render(env_id):
    """render(state, params) returns uint8[H, W, 3] after reset and after a step."""
    env, params = _make(env_id)
    if not callable(getattr(env, "render", None)):
        pytest.skip(f"{env_id}: no render")
    testing.check_render(env, params, KEY)


@pytest.mark.parametrize(
    "env_id",
    [
        pytest.param(i, marks=_marks("every_id_steps", i, entry_point(i) in EVERYDAY_CLASSES))
        for i in EVERY_HORDAX_ID
    ],
)
def test_contract__every_id_steps(env_id):
    """Every registered id: make, jitted reset and 3 steps, observations in their space."""
    env, params = _make(env_id)
    # gymnax's reset/step are jitted already; calling them directly shares their compiled
    # programs with the other checks of this env (a jax.jit around them compiles anew).
    reset, step = env.reset, env.step
    obs, state = reset(KEY, params)
    space, act = env.observation_space(params), env.action_space(params)
    for t in range(3):
        testing.assert_in_space(space, obs, f"{env_id} obs at step {t}")
        k = jax.random.fold_in(KEY, t)
        obs, state, reward, terminated, truncated, _ = step(k, state, act.sample(k), params)
    testing.assert_in_space(space, obs, f"{env_id} obs at step 3")


def test_contract__suite_covers_every_class_and_gymnax_ids():
    """Every hordax env class (one id each) and the four gymnax training ids are in the
    suite; every registered id is in test_contract__every_id_steps; the everyday tier has
    every family but those of FULL_TIER_FAMILIES."""
    classes = {entry_point(i) or i for i in hordax.registered_envs()}
    assert {entry_point(i) or i for i in HORDAX_IDS} == classes
    assert set(EVERY_HORDAX_ID) == set(hordax.registered_envs())
    assert set(HORDAX_IDS) >= CONTACT_IDS  # a renamed contact env keeps its tolerance
    assert {"Debug-PointMass-v0", "Debug-MultiPointMass-v0"} <= set(HORDAX_IDS)
    # The everyday tier's ids are suite ids, and every family (hordax.envs.<family>) has one.
    family = _family
    assert set(ALL_IDS) >= EVERYDAY_IDS
    everyday = {family(i) for i in EVERYDAY_IDS & set(HORDAX_IDS)}
    assert {family(i) for i in HORDAX_IDS} == everyday | set(FULL_TIER_FAMILIES)
    assert not everyday & set(FULL_TIER_FAMILIES)


def test_contract__check_env_runs_every_check():
    """hordax.testing.check_env, the three-line entry point, accepts Debug-PointMass-v0."""
    testing.check_env(*_make("Debug-PointMass-v0"), KEY)
