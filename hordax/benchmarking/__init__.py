"""Throughput measurement shared by ``hordax bench`` and every comparison in benchmarks/.

- :mod:`~hordax.benchmarking.harness`: :class:`Subject` (one side of a comparison) and
  :func:`compare` (every output of every step consumed, interleaved timed runs);
- :mod:`~hordax.benchmarking.subjects`: the hordax/gymnax sides, ``vmap(env.step)`` and
  ``VecEnv``;
- :mod:`~hordax.benchmarking.results`: the conditions of a run and its result files.
"""

from hordax.benchmarking.harness import Subject, compare, uniform_box, uniform_discrete

__all__ = ["Subject", "compare", "uniform_box", "uniform_discrete"]
