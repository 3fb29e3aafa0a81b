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

Several processes (``jax.distributed.initialize``, JAX's multi-controller runtime): every
process runs the same program on one mesh that spans the devices of all processes, each
process holding the same number of them. The host reads results with :func:`to_host`
(arrays with shards on other processes are gathered) and only :func:`is_primary` (process
0) writes files.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

# jax (and the config package, which imports it) are imported inside the functions: the CLI
# imports this module to call use_all_cpu_cores() before jax initializes its backends.
if TYPE_CHECKING:
    from hordax.training.config.mesh import MeshConfig

SEED_AXIS, DATA_AXIS = "seed", "data"

#: Train-state fields with a leading env axis (split over ``data``); every other field
#: (agent, key, counters, a replay buffer) is replicated over ``data``.
BATCHED_FIELDS = frozenset({"env_state", "obs", "carry", "reset", "agent_mask"})


def use_all_cpu_cores(num_devices: int | None = None) -> None:
    """Ask XLA for ``num_devices`` (default: all cores) host devices.

    Must run before jax initializes its backends; a no-op when ``XLA_FLAGS`` already sets
    a device count or when jax has already been initialized. For library users::

        import hordax.training.host.sharding as sh; sh.use_all_cpu_cores()  # before `import jax`
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
    from jax.sharding import Mesh

    from hordax.training.config.mesh import MeshConfig

    cfg = cfg or MeshConfig()
    devices = list(devices if devices is not None else jax.devices())
    seed, data = mesh_shape(cfg, len(devices), population)
    return Mesh(_device_grid(devices, seed, data), (SEED_AXIS, DATA_AXIS))


def _num_processes(devices: Any) -> int:
    return len({d.process_index for d in devices})


def _device_grid(devices: list, seed: int, data: int) -> Any:
    """``[seed, data]`` array of devices: the first ``seed * data`` of one process, or with
    several processes the same number of each (process-major, the first ones of each), so
    that every process holds a part of the mesh (a process outside it could not take part
    in the run's programs)."""
    import numpy as np

    n = seed * data
    procs = sorted({d.process_index for d in devices})
    if len(procs) == 1:
        return np.array(devices[:n]).reshape(seed, data)
    by_proc = [[d for d in devices if d.process_index == p] for p in procs]
    if n % len(procs) or n // len(procs) > min(len(b) for b in by_proc):
        raise ValueError(
            f"mesh.seed * mesh.data = {seed} * {data}: a run over {len(procs)} processes needs "
            f"a multiple of {len(procs)} devices, at most {min(len(b) for b in by_proc)} from "
            "each process (every process holds the same number of the mesh's devices)"
        )
    return np.array([d for b in by_proc for d in b[: n // len(procs)]]).reshape(seed, data)


def fit_data_axis(mesh: Any, num_envs: int, min_envs_per_device: int = 1) -> Any:
    """The largest mesh (same seed axis) whose data axis divides ``num_envs`` and gives each
    device at least ``min_envs_per_device`` envs; failing that the smallest such data axis
    (one device, or with several processes the fewest that keep every process in)."""
    from jax.sharding import Mesh

    seed, full = mesh.shape[SEED_AXIS], mesh.shape[DATA_AXIS]
    procs = _num_processes(mesh.devices.flat)
    fits = [d for d in range(full, 0, -1) if not num_envs % d and not (seed * d) % procs]
    if not fits:
        raise ValueError(
            f"trainer.num_envs={num_envs}: a run over {procs} processes splits the env batch "
            f"over a multiple of {procs // math.gcd(seed, procs)} devices (at most {full}); "
            "none of them divides num_envs"
        )
    data = next((d for d in fits if num_envs // d >= min_envs_per_device), fits[-1])
    if data == full:
        return mesh
    if procs == 1:
        return Mesh(mesh.devices[:, :data], (SEED_AXIS, DATA_AXIS))
    return Mesh(_device_grid(list(mesh.devices.flat), seed, data), (SEED_AXIS, DATA_AXIS))


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
    with ``population=True`` every leaf has a leading member axis split over ``seed``. A
    tuple of states (a mixed ensemble's groups) gets a tuple of shardings."""
    import jax
    from jax.sharding import NamedSharding

    if isinstance(state, tuple):
        return tuple(train_state_shardings(s, mesh, num_envs, population) for s in state)

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


def is_primary() -> bool:
    """Whether this is process 0, the one that writes files and logs (always true in a
    single-process run)."""
    import jax

    return jax.process_index() == 0


def to_host(tree: Any) -> Any:
    """NumPy copy of a pytree of arrays, the same on every process.

    Arrays with shards on other processes are gathered
    (``multihost_utils.process_allgather``, a collective: every process must call this at
    the same point); the others are plain ``jax.device_get``.
    """
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    def get(x: Any) -> Any:
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(get, tree)


def primary_str(value: str) -> str:
    """Process 0's ``value`` on every process (e.g. its run directory: each process's hydra
    may name its own timestamp); a collective, as in :func:`to_host`."""
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    if jax.process_count() == 1:
        return value
    raw = value.encode()[:4096]  # PATH_MAX on Linux
    buf = np.zeros(4097, np.uint8)  # NUL-terminated (a path holds no NUL)
    buf[: len(raw)] = np.frombuffer(raw, np.uint8)
    out = multihost_utils.broadcast_one_to_all(buf)
    return bytes(np.asarray(out, np.uint8)).split(b"\0", 1)[0].decode()
