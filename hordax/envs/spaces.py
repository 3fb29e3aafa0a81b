"""One space gymnax lacks: ``MultiDiscrete``, the stacked discrete actions of multi-agent envs.

Every other space is gymnax's own (``gymnax.environments.spaces``). A multi-agent env whose
agents pick discrete actions takes ``int32[n_agents]``; agent ``i`` picks from
``[0, nvec[i])``, so agents of different teams may have different action counts (MPE's speaker
and listener, for example). ``clip_action`` clips each entry into its own range; the
Gymnasium adapters map it to ``gymnasium.spaces.MultiDiscrete`` and the PettingZoo adapter gives
agent ``i`` a ``Discrete(nvec[i])``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments.spaces import Space


class MultiDiscrete(Space):
    """Integer vectors with entry ``i`` in ``[0, nvec[i])`` (jittable, gymnax-style).

    Args:
        nvec: the number of choices of each entry (a sequence of ints >= 1); ``shape`` is
            ``(len(nvec),)`` and ``dtype`` int32.
    """

    def __init__(self, nvec: Any):
        nvec = np.asarray(nvec)
        if nvec.ndim != 1 or nvec.size == 0 or not np.issubdtype(nvec.dtype, np.integer):
            raise ValueError(f"MultiDiscrete nvec={nvec.tolist()}: must be a 1-D list of ints")
        if np.any(nvec < 1):
            raise ValueError(f"MultiDiscrete nvec={nvec.tolist()}: every entry must be >= 1")
        self.nvec = tuple(int(k) for k in nvec)
        self.shape = (len(self.nvec),)
        self.dtype = jnp.int32

    def __repr__(self) -> str:
        return f"MultiDiscrete({list(self.nvec)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MultiDiscrete) and other.nvec == self.nvec

    def __hash__(self) -> int:
        return hash(("MultiDiscrete", self.nvec))

    def sample(self, key: jax.Array) -> jax.Array:
        """A uniform draw of every entry: ``int32[n]``."""
        return jax.random.randint(key, self.shape, 0, jnp.asarray(self.nvec), jnp.int32)

    def contains(self, x: jax.Array) -> jax.Array:
        """``bool[]``: every entry of ``x`` is in its range."""
        x = jnp.asarray(x)
        return jnp.all((x >= 0) & (x < jnp.asarray(self.nvec)))
