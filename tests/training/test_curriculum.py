"""Curricula: the rule registry, the level in the train state (traced: no recompile when it
changes), and a run SIGKILLed mid-curriculum and resumed ending as the uninterrupted run
(params bit for bit, every metrics row, the levels included)."""

from __future__ import annotations

import math

import jax
import pytest
from test_checkpoint import RUN as CHECKPOINT_RUN
from test_checkpoint import N, _cli, _killed, _rows, _untimed

from hordax.agents.ppo import PPOConfig
from hordax.envs.registry import make
from hordax.training.config import TrainConfig, TrainerConfig
from hordax.training.config.curriculum import CurriculumConfig, next_level, validate_curriculum
from hordax.training.trainers import make_trainer, validate

NAV = CurriculumConfig(name="navigate", field="num_obstacles", min_level=0, max_level=12)


def test_navigate_rule__is_navigates_helper_and_keeps_level_without_episodes():
    assert next_level(NAV, 4, 0.9) == 6 and next_level(NAV, 4, 0.5) == 3
    assert next_level(NAV, 4, 0.65) == 4 and next_level(NAV, 12, 1.0) == 12
    assert next_level(NAV, 0, 0.0) == 0
    assert next_level(NAV, 5, math.nan) == 5 and next_level(NAV, 5, None) == 5


def test_validate__names_the_key():
    run = TrainConfig()
    with pytest.raises(ValueError, match="curriculum.name='x'"):
        validate_curriculum(CurriculumConfig(name="x"), run)
    with pytest.raises(ValueError, match="curriculum.start=20"):
        validate_curriculum(CurriculumConfig(name="navigate", field="f", start=20), run)
    run.population.size = 2
    with pytest.raises(ValueError, match="curriculum.name=navigate: a curriculum drives one"):
        validate_curriculum(CurriculumConfig(name="navigate", field="f"), run)


def _point_mass_cfg(level_field="max_steps_in_episode"):
    cfg = TrainConfig(
        agent=PPOConfig(num_minibatches=2, num_epochs=1),
        trainer=TrainerConfig(
            num_envs=8, rollout_length=32, total_env_steps=8 * 32 * 2, num_chunks=2
        ),
        curriculum=CurriculumConfig(
            name="navigate", field=level_field, start=30, min_level=10, max_level=60
        ),
    )
    cfg.env.id = "Debug-PointMass-v0"
    return cfg


@pytest.mark.timeout(60)
def test_make_curriculum__a_metric_the_env_does_not_report_names_the_key():
    """``curriculum.metric=foo``: the row never has ``task/foo``, so the rule kept the level
    for the whole run, silently; now a ValueError naming the key and the env's metrics."""
    from hordax.training.host.curriculum import make_curriculum

    cfg = _point_mass_cfg()
    env, params = make("Debug-PointMass-v0")
    assert make_curriculum(cfg, env, params) is not None  # success: PointMass reports it
    cfg.curriculum.metric = "foo"
    with pytest.raises(ValueError, match=r"^curriculum.metric='foo': .*\['distance', 'success'\]"):
        make_curriculum(cfg, env, params)


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_curriculum_trainer__level_is_traced_state_no_recompile():
    cfg = _point_mass_cfg()
    env, params = make(cfg.env.id)
    trainer = make_trainer(cfg, env, params, validate(cfg))
    state = jax.jit(trainer.init)(trainer.init_key(0))
    assert int(state.level) == 30
    chunk = jax.jit(trainer.run_chunk)
    s30, m30 = chunk(state)
    s12, m12 = chunk(state.replace(level=jax.numpy.int32(12)))
    assert chunk._cache_size() == 1  # a new level is a new value, not a new program
    mean_len = lambda m: float(m["episode_length_sum"].sum() / m["episode_count"].sum())  # noqa: E731
    assert mean_len(m12) <= 12 < mean_len(m30) <= 30  # episodes truncate at the level
    with pytest.raises(ValueError, match="curriculum.field='nope'"):
        bad = _point_mass_cfg("nope")
        make_trainer(bad, env, params, validate(bad))


# --- SIGKILL + resume through the CLI: test_checkpoint.py's fault-injection run, with a curriculum

RUN = [
    *CHECKPOINT_RUN,
    "curriculum=navigate",
    "curriculum.field=max_steps_in_episode",
    "curriculum.start=30",
    "curriculum.min_level=10",
    "curriculum.max_level=60",
    "eval.episodes=4",
    "eval.every=4",
]


def _untimed_rows(run_dir):
    return _untimed(_rows(run_dir))


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_curriculum__sigkill_and_resume_continue_it_exactly(tmp_path):
    full = tmp_path / "full"
    summary = _cli([*RUN, f"hydra.run.dir={full}"], tmp_path)
    rows = _untimed_rows(full)
    levels = [r["curriculum/level"] for r in rows]
    assert len(rows) == N and levels[0] == 30 and len(set(levels)) > 1, levels  # it moved
    assert all(r["curriculum/next"] == n for r, n in zip(rows[:-1], levels[1:], strict=True))
    assert summary["curriculum"]["final_level"] == rows[-1]["curriculum/next"]
    assert [c for c, r in enumerate(rows) if "eval/return" in r] == [3, 7, 11, 15]

    run = tmp_path / "killed"
    _killed([*RUN, f"hydra.run.dir={run}"], tmp_path, "chunk:7")  # mid-curriculum
    _killed([f"resume={run}"], tmp_path, "metrics:3")  # logged, not checkpointed
    again = _cli([f"resume={run}"], tmp_path)
    assert (run / "params.msgpack").read_bytes() == (full / "params.msgpack").read_bytes()
    assert _untimed_rows(run) == rows
    assert again["curriculum"] == summary["curriculum"]
    assert again["eval"]["return"] == summary["eval"]["return"]
    # Resumed after its last chunk: the summary still has the curriculum and the evaluation.
    end = _cli([f"resume={run}"], tmp_path)
    assert end["curriculum"] == summary["curriculum"]
    assert end["eval"]["return"] == summary["eval"]["return"]
