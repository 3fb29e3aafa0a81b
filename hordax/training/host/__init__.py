"""The host side of a run: device meshes and shardings, checkpoints, loggers, the run
directory's files, the jitted programs and their drivers, and the one host loop
(:func:`hordax.training.host.loop.train_and_log`).

Nothing is imported here: the CLI imports :mod:`hordax.training.host.sharding` to configure
XLA's host devices before jax initializes.
"""
