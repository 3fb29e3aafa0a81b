"""Environment registry: lazy hordax factories handed to gymnax's own registry.

There is one registry, gymnax's. hordax adds *lazy* entry points (``"module:Class"``) so
that ``import hordax`` imports no env family, and ``make`` that also sets params fields::

    env, params = hordax.make("CartPole-v1")                    # any gymnax id
    env, params = hordax.make("CartPole-v1", gravity=12.0)      # a params field
    env, params = hordax.make("Grid-Empty-8x8-v0", view_size=5)  # a constructor argument
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import re
from collections.abc import Callable
from typing import Any

import gymnax
from gymnax import registration as gx_registration

from hordax.envs.core import check_time_limit
from hordax.envs.params import set_params

# ids registered by hordax itself (gymnax's list holds these and its built-ins).
_HORDAX_IDS: list[str] = []


class UnknownEnvError(ValueError):
    """Raised by :func:`make` for an id that no registry holds."""


class UnknownArgumentError(ValueError):
    """Raised by :func:`make` for a keyword that is neither a constructor argument nor a
    params field (the command line names it ``env.kwargs.<keyword>``)."""


def renamed_params(message: str, prefix: str) -> str:
    """``message`` (an error of :func:`make`, naming fields ``params.<field>``) with each
    ``params.`` field name under ``prefix`` instead, as the caller's user gave them
    (``env.params.`` on the command line, ``env_params.`` for ``hordax eval``)."""
    return re.sub(r"(?<![\w.])params\.", prefix, message)


def _lazy_factory(entry_point: str, default_kwargs: dict[str, Any]) -> Callable[..., Any]:
    module_name, _, attr = entry_point.partition(":")
    if not module_name or not attr:
        raise ValueError(f"entry_point={entry_point!r}: must look like 'package.module:Class'")

    def factory(**kwargs: Any) -> Any:
        cls = getattr(importlib.import_module(module_name), attr)
        return cls(**{**default_kwargs, **kwargs})

    factory.entry_point = entry_point  # type: ignore[attr-defined]
    return factory


def register(env_id: str, entry_point: str | Callable[..., Any], **default_kwargs: Any) -> None:
    """Register ``env_id`` with gymnax's registry.

    Args:
        env_id: id such as ``"Aerial-Hover-v0"``; must be new.
        entry_point: ``"package.module:Class"`` (imported lazily at ``make``) or a factory.
        **default_kwargs: constructor arguments baked into this id (e.g. a grid size).
    """
    if isinstance(entry_point, str):
        factory = _lazy_factory(entry_point, default_kwargs)
    else:
        factory = entry_point
        if default_kwargs:
            base = entry_point

            def factory(**kwargs: Any) -> Any:
                return base(**{**default_kwargs, **kwargs})

    gymnax.register(env_id, factory)
    _HORDAX_IDS.append(env_id)


def registered_envs(include_gymnax: bool = False) -> list[str]:
    """Ids that :func:`make` accepts: hordax's own, plus gymnax's built-ins if asked."""
    if include_gymnax:
        return list(gx_registration.registered_envs)
    return list(_HORDAX_IDS)


def entry_point(env_id: str) -> str | None:
    """The ``"module:Class"`` behind a hordax id (None for gymnax built-ins and factories)."""
    factory = gx_registration._registry.get(env_id)
    return getattr(factory, "entry_point", None)


def constructor_accepts(env_id: str, names: list[str]) -> bool:
    """Whether the constructor behind ``env_id`` names every keyword in ``names`` as a
    parameter (False for an unknown id). A ``**kwargs`` catch-all does not count: it says
    nothing of what the constructor understands (XLandTrials once forwarded ``**kwargs`` to
    XLand and was taken for a trading env, so ``hordax eval split=`` passed it
    ``random_start=``)."""
    factory = gx_registration._registry.get(env_id)
    if factory is None:
        return False
    signature = _constructor_signature(factory)
    return signature is not None and set(names) <= signature[0]


def _constructor_signature(factory: Callable[..., Any]) -> tuple[set[str], bool] | None:
    """``(named parameters, takes **kwargs)`` of the class behind ``factory`` (or of the
    factory itself), None where Python cannot tell."""
    target = factory
    entry = getattr(factory, "entry_point", None)
    if entry is not None:
        module_name, _, attr = entry.partition(":")
        target = getattr(importlib.import_module(module_name), attr)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    named = {
        name
        for name, p in sig.parameters.items()
        if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    }
    return named, var_kw


def _split_kwargs(factory: Callable[..., Any], kwargs: dict[str, Any]) -> tuple[dict, dict]:
    """Split ``kwargs`` into constructor arguments and the rest (params overrides)."""
    signature = _constructor_signature(factory)
    if signature is None:
        return {}, dict(kwargs)
    named, var_kw = signature
    names = set(kwargs) if var_kw else named  # a **kwargs constructor takes everything
    ctor = {k: v for k, v in kwargs.items() if k in names}
    rest = {k: v for k, v in kwargs.items() if k not in names}
    return ctor, rest


def make(env_id: str, params: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Any, Any]:
    """Build an environment and its params.

    Args:
        env_id: a hordax id or any gymnax id (``"CartPole-v1"``, ``"Pendulum-v1"``, ...).
        params: overrides for fields of ``env.default_params``.
        **kwargs: constructor arguments; a keyword the constructor does not take is
            treated as a params field, so ``make("CartPole-v1", gravity=12.0)`` works.

    Returns:
        ``(env, params)``. Overrides are checked against the default params' field types
        and shapes, nested groups included (:mod:`hordax.envs.params`), then the env's own
        ``validate_params`` checks ranges (for gymnax ids, which have none, the time limit
        ``max_steps_in_episode >= 1``); a bad value raises ``ValueError`` naming the field,
        the value and what is allowed.
    """
    registry = gx_registration._registry  # gymnax exposes no public lookup
    if env_id not in registry:
        close = difflib.get_close_matches(str(env_id), list(registry), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownEnvError(
            f"env={env_id!r} is not a registered environment{hint} "
            "(hordax.registered_envs(include_gymnax=True) lists them all)"
        )
    ctor_kwargs, param_kwargs = _split_kwargs(registry[env_id], kwargs)
    env, env_params = gymnax.make(env_id, **ctor_kwargs)
    fields = {f.name for f in dataclasses.fields(env_params)}
    stray = sorted(k for k in param_kwargs if k.split(".")[0] not in fields)
    if stray:  # a keyword is a constructor argument or a params field: name both lists
        signature = _constructor_signature(registry[env_id])
        ctor = sorted(signature[0]) if signature else []
        raise UnknownArgumentError(
            f"{stray[0]}: neither an argument of the {env_id} constructor (allowed: {ctor}) "
            f"nor a field of its params (allowed: {sorted(fields)})"
        )
    twice = sorted(set(param_kwargs) & set(params or {}))  # else the dict won silently
    if twice:
        name = twice[0]
        raise ValueError(
            f"params.{name}: given twice, as the keyword {name}={param_kwargs[name]!r} and in "
            f"params ({params[name]!r}); give it once"
        )
    overrides = {**param_kwargs, **(params or {})}
    if overrides:
        env_params = set_params(env_params, overrides, owner=f"{env_id} params")
    validate_params(env, env_params)
    return env, env_params


def validate_params(env: Any, env_params: Any) -> None:
    """The env's own ``validate_params`` (hordax envs), else the time-limit check that every
    env needs (gymnax's built-ins define no checks); ``ValueError`` naming the field."""
    validate = getattr(env, "validate_params", None)
    if callable(validate):
        validate(env_params)
    else:
        check_time_limit(env_params)
