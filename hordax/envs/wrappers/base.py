"""The wrapper base: gymnax's ``GymnaxWrapper`` (``_env`` plus attribute proxy)."""

from __future__ import annotations

from typing import Any

from gymnax.wrappers.purerl import GymnaxWrapper


class Wrapper(GymnaxWrapper):
    """Base wrapper; ``unwrapped`` reaches the innermost environment."""

    @property
    def unwrapped(self) -> Any:
        inner = self._env
        while hasattr(inner, "_env"):
            inner = inner._env
        return inner

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._env!r})"
