"""The layer below every trainer: rollout, return estimators, replay, the env stack, episode
statistics and NaN flags, observation statistics, the train-state types and the
:class:`~hordax.training.core.types.Trainer` protocol. Imports ``hordax.envs`` and
``hordax.agents`` only (nothing else of ``hordax.training``)."""
