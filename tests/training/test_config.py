"""Derived run sizes: the env-step budget is rounded up, never down (issue #18 item 6)."""

import pytest

from hordax.training.config import TrainConfig, TrainerConfig
from hordax.training.trainers import validate


def _resolved(num_envs, rollout_length, total_env_steps, num_chunks):
    trainer = TrainerConfig(
        num_envs=num_envs,
        rollout_length=rollout_length,
        total_env_steps=total_env_steps,
        num_chunks=num_chunks,
    )
    return validate(TrainConfig(trainer=trainer))


@pytest.mark.timeout(60)
def test_resolve__40000_steps_of_256x16_round_up_to_40960():
    """The case from issue #18: 10 updates of 4,096 steps, not 9 (36,864 steps)."""
    r = _resolved(256, 16, 40_000, 20)
    assert (r.num_updates, r.chunk_updates, r.num_chunks, r.env_steps) == (10, 1, 10, 40_960)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_envs,rollout_length", [(4, 128), (256, 16), (5, 12)])
@pytest.mark.parametrize("num_chunks", [1, 3, 20])
def test_resolve__budget_is_rounded_up_to_whole_updates_then_whole_chunks(
    num_envs, rollout_length, num_chunks
):
    """For many budgets: at least the requested steps, less than one update plus one chunk
    more, at most ``num_chunks`` equal chunks."""
    spu = num_envs * rollout_length
    for total in [spu, spu + 1, 2 * spu - 1, 10 * spu, 10 * spu + 1, 500_000, 40_000]:
        if total < spu:
            continue
        r = _resolved(num_envs, rollout_length, total, num_chunks)
        updates = -(-total // spu)  # whole updates covering the budget
        assert r.env_steps >= total
        assert updates <= r.num_updates < updates + r.chunk_updates
        assert r.num_updates == r.chunk_updates * r.num_chunks
        assert r.num_chunks <= num_chunks
