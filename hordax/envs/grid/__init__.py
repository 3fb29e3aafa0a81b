"""Grid-world family: MiniGrid layouts and XLand-style rules/goals task distributions.

- ``world.py``: tiles, colours, the six actions and the occluded egocentric view (pure JAX).
- ``rules.py``: goal and production-rule encodings and their checks/effects.
- ``layouts.py``: MiniGrid layouts generated in jit from a key.
- ``env.py``: :class:`~hordax.envs.grid.env.GridEnv` and the classic envs (``Grid-Empty-8x8-v0``,
  ``Grid-DoorKey-8x8-v0``, ...); ``ascii.py``: user maps (``Grid-Ascii-v0``).
- ``xland.py``: task generator, benchmarks (``.npz``), ``XLand`` and meta-RL ``XLandTrials``.
- ``render.py``: RGB frames and text; ``make_benchmark.py``: the benchmark command.

See ``docs/grid.md``.
"""
