"""The mesh schema (hydra group ``mesh``) and its checks; the mesh itself is built by
``hordax.training.host.sharding``."""

from __future__ import annotations

from dataclasses import dataclass


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


def validate_mesh(mesh: MeshConfig) -> None:
    """Host-side checks of a mesh config; ``ValueError`` naming the key (``mesh.<key>``)."""
    for key, value in (("seed", mesh.seed), ("data", mesh.data)):
        if not (value == -1 or value >= 1):
            raise ValueError(f"mesh.{key}={value}: must be -1 (auto) or an integer >= 1")
    if mesh.min_envs_per_device < 1:
        raise ValueError(
            f"mesh.min_envs_per_device={mesh.min_envs_per_device}: must be an integer >= 1"
        )
