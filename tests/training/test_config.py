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


# --- per-member hyperparameters of a population ------------------------------------------
# population.hparams replaces the agent config's value member by member (the traced
# hyperparameters); each value must pass the same check as agent.<name>, or a member trains
# with e.g. a Polyak rate of 2 or a negative learning rate without a word.
def _population(agent, hparams):
    from hordax.training.config import PopulationConfig

    size = len(next(iter(hparams.values())))
    trainer = TrainerConfig(num_envs=4, rollout_length=4, total_env_steps=64)
    return TrainConfig(
        agent=agent, trainer=trainer, population=PopulationConfig(size=size, hparams=hparams)
    )


def _pql():
    from hordax.agents.pql import PQLConfig

    return PQLConfig(batch_size=16, buffer_size=64)


def _pqn():
    from hordax.agents.pqn import PQNConfig

    return PQNConfig(num_minibatches=2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "agent,hparams,message",
    [
        (_pql, {"tau": [0.05, 2.0]}, "population.hparams.tau=[0.05, 2.0]: member 1: agent.tau=2.0"),
        (_pql, {"tau": [0.0, 0.5]}, "population.hparams.tau=[0.0, 0.5]: member 0: agent.tau=0.0"),
        (_pql, {"critic_lr": [1e-3, -1e-3]}, "member 1: agent.critic_lr=-0.001: must be a fini"),
        (_pqn, {"q_lambda": [0.5, 1.5]}, "member 1: agent.q_lambda=1.5: must be in [0, 1]"),
        (_pqn, {"epsilon_finish": [-0.1, 0.1]}, "member 0: agent.epsilon_finish=-0.1: must be"),
        (_pqn, {"learning_rate": [0.0, 1e-3]}, "member 0: agent.learning_rate=0.0: must be a"),
    ],
)
def test_population_hparams__every_member_value_is_checked_like_the_agent_key(
    agent, hparams, message
):
    from hordax.training.config import ConfigError

    with pytest.raises(ConfigError) as e:
        validate(_population(agent(), hparams))
    assert message in str(e.value)


@pytest.mark.timeout(60)
def test_population_hparams__values_in_range_pass():
    validate(_population(_pql(), {"tau": [0.01, 1.0], "actor_lr": [1e-4, 1e-3]}))
    validate(_population(_pqn(), {"q_lambda": [0.0, 1.0], "epsilon_finish": [0.0, 1.0]}))
