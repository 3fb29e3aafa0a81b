"""Modules that gymnax imports for rendering only, loaded when first used instead.

``import gymnax`` (which every hordax env module does, for the env API and spaces) runs
gymnax's ``__init__``, which imports every gymnax environment, and some of those import
``seaborn`` (and with it ``scipy.stats`` and ``pandas``) and ``matplotlib.pyplot`` at module
level, for their ``render`` methods only. That was about half of the start-up time of every
``hordax`` command and test process (``import hordax.envs``: 5.5-6.3 s before, 2.4-3.1 s
after, three runs each at load average 6.5 on 2 cores; benchmarks/RESULTS.md section 21).

:func:`defer` puts a stand-in for such a module into ``sys.modules``; the real module is
imported the first time any attribute of the stand-in is read (``sns.color_palette(...)`` in
a gymnax renderer, or your own ``import seaborn as sns; sns.lineplot(...)``); from then on
``sys.modules`` holds the real module, and a name bound to the stand-in before sees the real
module's attributes. The stand-in carries the real module's ``__spec__``, so ``import``
statements take it as already imported (the standard library's ``importlib.util.LazyLoader``
does not help here: on Python 3.11 the ``import`` statement itself reads ``__spec__`` and so
loads the module).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

#: Imported by gymnax environments at module level for rendering only.
RENDER_ONLY = ("seaborn", "matplotlib.pyplot")


class _Deferred(types.ModuleType):
    """Stands in for the module of the same name until one of its attributes is read."""

    def __getattr__(self, attr: str):  # only called for attributes the stand-in lacks
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        # names bound to the stand-in before (``import seaborn as sns``) read the real
        # module's attributes from now on without coming here
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def defer(names: tuple[str, ...] = RENDER_ONLY) -> None:
    """Put a stand-in for each module of ``names`` that is installed and not yet imported."""
    for name in names:
        if name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        stand_in = _Deferred(name)
        stand_in.__spec__ = spec
        sys.modules[name] = stand_in
