"""Ensembles of trained members (PPO, or mixed PPO / PQN / PQL): combination rules
(:mod:`.combine`), member loading and greedy acting (:mod:`.members`), and side-by-side
evaluation with the summary section of ``agent=ensemble`` (:mod:`.evaluate`)."""

from hordax.training.config.ensemble import EnsembleConfig, apply_members, validate_ensemble
from hordax.training.ensemble.combine import (
    majority_vote,
    member_weights,
    rolling_choices,
    rolling_init,
    rolling_update,
    weighted_average,
)
from hordax.training.ensemble.evaluate import (
    add_ensemble_to_summary,
    best_member,
    curve_scores,
    ensemble_summary,
    equity_curves,
    evaluate_run,
    make_evaluator,
    resolve_periods_per_year,
    run_names,
    score_name,
)
from hordax.training.ensemble.members import (
    LoadedRun,
    Members,
    MixedMembers,
    agent_for,
    all_member_actions,
    greedy_policy,
    load_members,
    load_run,
    member_actions_fn,
    member_agent,
    member_algorithms,
)

__all__ = [
    "EnsembleConfig",
    "LoadedRun",
    "Members",
    "MixedMembers",
    "add_ensemble_to_summary",
    "agent_for",
    "all_member_actions",
    "apply_members",
    "best_member",
    "curve_scores",
    "ensemble_summary",
    "equity_curves",
    "evaluate_run",
    "greedy_policy",
    "load_members",
    "load_run",
    "majority_vote",
    "make_evaluator",
    "member_actions_fn",
    "member_agent",
    "member_algorithms",
    "member_weights",
    "resolve_periods_per_year",
    "rolling_choices",
    "rolling_init",
    "rolling_update",
    "run_names",
    "score_name",
    "validate_ensemble",
    "weighted_average",
]
