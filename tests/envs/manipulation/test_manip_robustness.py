"""Robustness of the manipulation family (issue #17's must-show): env steps of extreme
actions (+-1e6, +-inf, NaN, U(-10, 10)) through the trainer's env stack leave nothing
non-finite in the batch a trainer would see, the observations stay in their spaces, the
episode flags stay on schedule and the physics never goes non-finite
(:func:`hordax.training.core.stress.extreme_action_run`).

Reach runs 10^5 env steps here; the contact tasks, whose CPU steps are 25-300x slower, run
4,096 (Push) and 1,024 (the hands) here and 10^5 in ``benchmarks/extreme_actions.py``
(benchmarks/RESULTS.md section 24). The cube's 128 x 32 batch took 137 s of one core here,
its 32 x 32 one 71 s (RESULTS 35).
"""

from __future__ import annotations

import jax
import pytest

import hordax
from hordax.training.core import stress

#: (envs, steps) per id: Reach 102,400 env steps (>= 10^5); Push 4,096; the hands 1,024
SIZES = {
    "Manip-Reach-v0": (1024, 100),
    "Manip-Push-v0": (128, 32),
    "Manip-HandSphereRotate-v0": (32, 32),
    "Manip-HandCubeRotateZ-v0": (32, 32),
}


@pytest.mark.slow  # one compile of the batched MJX step each: 30-90 s on 2 shared cores
@pytest.mark.timeout(900)
@pytest.mark.parametrize("env_id", list(SIZES))
def test_extreme_actions_never_leave_a_nonfinite_value_in_the_batch(env_id):
    env, params = hordax.make(env_id)
    num_envs, num_steps = SIZES[env_id]
    if env_id == "Manip-Reach-v0":
        assert num_envs * num_steps >= 100_000
    first, out = stress.extreme_action_run(env, params, jax.random.key(0), num_envs, num_steps)
    assert stress.failures(first, out) == []
    # Clipped joint targets never drive the physics non-finite (the guard never fires).
    assert int(out["nonfinite"].sum()) == 0
    # Truncation on each env's own schedule is in `failures` (trunc_on_schedule); the
    # contact tasks' terminations (drops) are whatever the extreme actions cause.
    max_steps = int(params.max_steps_in_episode)
    assert int(out["truncated"].sum()) == num_envs * (num_steps // max_steps)
    if env_id == "Manip-Reach-v0":  # no termination: nothing to drop
        assert int(out["terminated"].sum()) == 0
