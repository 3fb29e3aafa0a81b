"""Device meshes and shardings: the only module in hordax that knows about devices.

A mesh has two axes, ``("seed", "data")``: population members (seeds or hyperparameter
settings) are split over ``seed``, the environment batch over ``data``. Agent parameters
and optimizer state are replicated over ``data``. Programs are plain ``jax.jit`` with
``in_shardings``/``out_shardings`` (modern pjit, GSPMD): XLA inserts the collectives
(e.g. the all-reduce of gradients and of normalizer statistics). Keys are split per
environment *before* sharding, so results do not depend on the device count.

On a CPU-only machine XLA exposes one device that runs these programs on about one core;
:func:`use_all_cpu_cores` (called by the ``hordax`` entry points before jax is imported)
asks XLA for one host device per core so the env batch is spread over all cores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

SEED_AXIS, DATA_AXIS = "seed", "data"

#: Train-state fields with a leading env axis (split over ``data``); every other field
#: (agent, key, counters, a replay buffer) is replicated over ``data``.
BATCHED_FIELDS = frozenset({"env_state", "obs", "carry", "reset"})


@dataclass
class MeshConfig:
    """Mesh shape (hydra group ``mesh``)."""

    name: str = "auto"
    """Preset name (auto, single, data8, seed8, seed4_data2, ...): documentation only."""
    seed: int = -1
    """Devices on the population axis; -1 = the largest divisor of population.size that
    fits the devices (1 without a population)."""
    data: int = -1
    """Devices on the env-batch axis; -1 = all devices not used by ``seed``."""
    min_envs_per_device: int = 128
    """With data=-1, use fewer devices rather than give one fewer envs than this (small
    batches run faster on one device: the update's shuffles cost more than they save)."""


def use_all_cpu_cores(num_devices: int | None = None) -> None:
    """Ask XLA for ``num_devices`` (default: all cores) host devices.

    Must run before jax initializes its backends; a no-op when ``XLA_FLAGS`` already sets
    a device count or when jax has already been initialized. For library users::

        import hordax.training.sharding as sh; sh.use_all_cpu_cores()  # before `import jax`
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" in flags:
        return
    n = int(num_devices or os.cpu_count() or 1)
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()


def mesh_shape(cfg: MeshConfig, num_devices: int, population: int = 1) -> tuple[int, int]:
    """``(seed, data)`` device counts; ``ValueError`` naming the key when impossible."""
    seed = cfg.seed
    if seed == -1:
        seed = max(d for d in range(1, min(population, num_devices) + 1) if population % d == 0)
    if seed < 1:
        raise ValueError(f"mesh.seed={cfg.seed}: must be -1 (auto) or an integer >= 1")
    if population % seed:
        raise ValueError(
            f"mesh.seed={seed}: must divide population.size={population} (members are split "
            "evenly over the seed axis)"
        )
    data = num_devices // seed if cfg.data == -1 else cfg.data
    if data < 1:
        raise ValueError(f"mesh.data={cfg.data}: must be -1 (all remaining devices) or >= 1")
    if seed * data > num_devices:
        raise ValueError(
            f"mesh.seed * mesh.data = {seed} * {data}: needs {seed * data} devices, "
            f"{num_devices} available"
        )
    return seed, data


def make_mesh(
    cfg: MeshConfig | None = None, devices: list | None = None, population: int = 1
) -> Any:
    """A ``jax.sharding.Mesh`` with axes ``("seed", "data")``."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    cfg = cfg or MeshConfig()
    devices = list(devices if devices is not None else jax.devices())
    seed, data = mesh_shape(cfg, len(devices), population)
    grid = np.array(devices[: seed * data]).reshape(seed, data)
    return Mesh(grid, (SEED_AXIS, DATA_AXIS))


def fit_data_axis(mesh: Any, num_envs: int, min_envs_per_device: int = 1) -> Any:
    """The largest mesh (same seed axis) whose data axis divides ``num_envs`` and gives each
    device at least ``min_envs_per_device`` envs (at least one device)."""
    from jax.sharding import Mesh

    data = mesh.shape[DATA_AXIS]
    while data > 1 and (num_envs % data or num_envs // data < min_envs_per_device):
        data -= 1
    if data == mesh.shape[DATA_AXIS]:
        return mesh
    return Mesh(mesh.devices[:, :data], (SEED_AXIS, DATA_AXIS))


def train_mesh(cfg: MeshConfig, num_envs: int, population: int = 1) -> Any:
    """The mesh a training run uses: :func:`make_mesh`, then the data axis trimmed to a
    divisor of ``num_envs`` (with ``data=-1``, also to >= ``min_envs_per_device`` each)."""
    min_envs = cfg.min_envs_per_device if cfg.data == -1 else 1
    mesh = make_mesh(cfg, population=population)
    if cfg.data != -1 and num_envs % cfg.data:
        raise ValueError(
            f"mesh.data={cfg.data}: must divide trainer.num_envs={num_envs} (the env batch is "
            "split evenly over the data axis)"
        )
    return fit_data_axis(mesh, num_envs, min_envs)


def _spec(leaf: Any, batch_axes: tuple, batch_size: int, population: bool) -> Any:
    from jax.sharding import PartitionSpec as P

    shape = getattr(leaf, "shape", ())
    lead = (SEED_AXIS,) if population else ()
    offset = 1 if population else 0
    if batch_axes and len(shape) > offset and shape[offset] == batch_size:
        return P(*lead, DATA_AXIS)
    return P(*lead)


def train_state_shardings(state: Any, mesh: Any, num_envs: int, population: bool = False) -> Any:
    """Shardings for a trainer state: env state and observations split over ``data`` on
    their env axis, everything else (agent, keys, counters) replicated over ``data``;
    with ``population=True`` every leaf has a leading member axis split over ``seed``."""
    import jax
    from jax.sharding import NamedSharding

    def shard(subtree: Any, batched: bool) -> Any:
        return jax.tree.map(
            lambda x: NamedSharding(
                mesh, _spec(x, (DATA_AXIS,) if batched else (), num_envs, population)
            ),
            subtree,
        )

    import dataclasses

    return state.replace(
        **{
            f.name: shard(getattr(state, f.name), f.name in BATCHED_FIELDS)
            for f in dataclasses.fields(state)
        }
    )


def replicated(mesh: Any, tree: Any, population: bool = False) -> Any:
    """Replicated shardings (split over ``seed`` when ``population``) for any pytree."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    spec = P(SEED_AXIS) if population else P()
    return jax.tree.map(lambda _: NamedSharding(mesh, spec), tree)


def pql_role_devices(devices: list | None = None) -> tuple[Any, Any, Any]:
    """Devices of PQL's parallel roles ``(actor, V-learner, P-learner)``.

    3+ devices: devices 0, 1, 2 (one role each); 2 devices: the actor (env simulation) on
    device 0, both learners on device 1; 1 device: all three roles share it and overlap
    asynchronously (their programs are dispatched from separate host threads).
    """
    import jax

    devices = list(devices if devices is not None else jax.devices())
    if not devices:
        raise ValueError("pql_role_devices: no devices")
    if len(devices) >= 3:
        return devices[0], devices[1], devices[2]
    if len(devices) == 2:
        return devices[0], devices[1], devices[1]
    return devices[0], devices[0], devices[0]
