"""Evaluation of trained agents on fresh episodes (``hordax eval``, train-time evaluation).

Layer: above ``ensemble`` (it reuses its run loading), below the command-line apps.
"""

from hordax.training.evaluation.episodes import episode_keys, eval_root, interval
from hordax.training.evaluation.hook import EvalHook, train_hooks
from hordax.training.evaluation.run import EvalConfig, Evaluator, run_eval, validate_eval

__all__ = [
    "EvalConfig",
    "EvalHook",
    "Evaluator",
    "episode_keys",
    "eval_root",
    "interval",
    "run_eval",
    "train_hooks",
    "validate_eval",
]
