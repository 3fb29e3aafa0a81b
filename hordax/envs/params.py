"""Setting env params fields from user input, with types taken from the default params.

Every registered env (hordax's and gymnax's) has a ``default_params`` dataclass; its field
values say what a field holds, so overrides are checked generically, for every id:

- a bool field (``bool`` or a bool array) takes bools; an int field (``int`` or an integer
  array) takes integers that fit its dtype (a Python scalar: the dtype JAX gives it inside
  jit, int32 unless x64 is on); a float field (``float`` or a float array) takes real
  numbers that stay finite in its dtype (``inf`` only where the field's metadata says
  ``allow_inf=True``, e.g. a threshold that ``inf`` disables); NaN is never accepted;
- an array field takes a value of the default's shape (a scalar field takes a scalar);
- a nested params dataclass (the aerial ``quad``/``ctrl`` groups) takes a mapping of its own
  fields, to any depth: ``{"quad": {"mass": 0.3}}`` or the dotted ``{"quad.mass": 0.3}``.

A bad value raises ``ValueError("params.<field>=<value>: <what is allowed>")``; the CLI
prefixes ``env.``. Values keep the default's container: a Python scalar stays a Python
scalar (an int given to a float field becomes a float), an array becomes an array of the
default's dtype. Range checks are the env's own (``validate_params``), after this.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np


def _show(value: Any) -> str:
    """The value for a one-line message (a big array by its dtype and shape only)."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, np.ndarray | jax.Array | list | tuple):
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError):
            return repr(value)[:80]
        if arr.size > 16:
            return f"<{arr.dtype} array of shape {list(arr.shape)}>"
        return str(arr.tolist()) if arr.dtype != object else repr(value)[:80]
    return str(value)


def _kind(default: Any) -> str | None:
    """'bool', 'int', 'float' or None (a field hordax does not type-check, e.g. a string)."""
    if isinstance(default, bool | np.bool_):
        return "bool"
    if isinstance(default, int | np.integer):
        return "int"
    if isinstance(default, float | np.floating):
        return "float"
    dtype = getattr(default, "dtype", None)
    if dtype is None:
        return None
    if np.issubdtype(dtype, np.bool_):
        return "bool"
    if np.issubdtype(dtype, np.integer):
        return "int"
    if np.issubdtype(dtype, np.floating):
        return "float"
    return None


_RULES = {
    "bool": "must be a bool (true or false)",
    "int": "must be an integer",
    "float": "must be a finite number",
}


def check_field(default: Any, value: Any, key: str, allow_inf: bool = False) -> Any:
    """``value`` checked against the field's ``default`` and converted to its type.

    Args:
        default: the field's default value (Python scalar or array: gives kind and shape).
        value: the user's value (Python scalar, list, numpy or jax array).
        key: the field's dotted name for the message, e.g. ``"params.quad.mass"``.
        allow_inf: accept +-inf in a float field (NaN is always refused).

    Raises:
        ValueError: ``"<key>=<value>: <rule>"`` naming the expected type or shape.
    """
    kind = _kind(default)
    if kind is None:
        return value
    rule = _RULES[kind] if not allow_inf else "must be a number (inf allowed, not NaN)"
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # ragged lists and the like
        raise ValueError(f"{key}={_show(value)}: {rule}") from None
    if kind == "bool":
        ok = arr.dtype == np.bool_
    elif kind == "int":
        ok = np.issubdtype(arr.dtype, np.integer)
    else:
        ok = np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    if not ok:
        raise ValueError(f"{key}={_show(value)}: {rule}")
    want = np.shape(default)
    if arr.shape != want:
        what = "a scalar" if want == () else f"an array of shape {list(want)}"
        raise ValueError(f"{key}={_show(value)}: must be {what} (got shape {list(arr.shape)})")
    if kind == "float":
        bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
        if np.any(bad):
            raise ValueError(f"{key}={_show(value)}: {rule}")
    # The dtype the value has inside jit: the array's own, or JAX's default for a Python
    # scalar (int32/float32 unless x64 is enabled).
    dtype = getattr(default, "dtype", None)
    if dtype is None:
        dtype = jax.dtypes.canonicalize_dtype({"bool": bool, "int": int, "float": float}[kind])
    if kind == "int":
        info = np.iinfo(dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise ValueError(f"{key}={_show(value)}: must fit {dtype} ([{info.min}, {info.max}])")
    with np.errstate(over="ignore"):
        cast = np.asarray(arr, dtype=dtype)
    if kind == "float" and np.any(np.isfinite(arr) & ~np.isfinite(cast)):
        raise ValueError(f"{key}={_show(value)}: must fit {cast.dtype} (overflows to inf)")
    if isinstance(default, jax.Array):
        return jax.numpy.asarray(cast)
    if isinstance(default, np.ndarray | np.generic):
        return cast
    return {"bool": bool, "int": int, "float": float}[kind](arr)


def _nest(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``{"quad.mass": 1}`` -> ``{"quad": {"mass": 1}}`` (plain keys unchanged)."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        head, _, rest = str(key).partition(".")
        if rest:
            sub = out.setdefault(head, {})
            if not isinstance(sub, dict):  # both "quad" and "quad.mass" given
                raise ValueError(f"params.{key}: given both as a whole and field by field")
            sub[rest] = value
        else:
            out[head] = value
    return out


def set_params(
    params: Any, overrides: Mapping[str, Any], prefix: str = "params", owner: str = ""
) -> Any:
    """``params`` (a params dataclass) with ``overrides`` checked and set, at any depth.

    Args:
        params: the params to start from (usually the env's ``default_params``).
        overrides: ``{field: value}``; a nested group takes a mapping (or an instance of its
            dataclass), and ``"group.field"`` keys are accepted too.
        prefix: the dotted name of ``params`` in messages.
        owner: what the params belong to, for messages (default: the dataclass's name).

    Raises:
        ValueError: an unknown field (listing the allowed ones) or a bad value
            (see :func:`check_field`).
    """
    fields = {f.name: f for f in dataclasses.fields(params)}
    overrides = _nest(overrides)
    unknown = [k for k in overrides if k not in fields]
    if unknown:
        names = ", ".join(f"{prefix}.{k}" for k in unknown)
        raise ValueError(
            f"{names}: unknown field of {owner or type(params).__name__}; allowed: {sorted(fields)}"
        )
    changes = {}
    for name, value in overrides.items():
        default, key = getattr(params, name), f"{prefix}.{name}"
        if dataclasses.is_dataclass(default):
            if isinstance(value, type(default)):
                value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            if not isinstance(value, Mapping):
                raise ValueError(
                    f"{key}={_show(value)}: must be a mapping of {type(default).__name__} "
                    f"fields (e.g. {key}.{dataclasses.fields(default)[0].name}=...)"
                )
            changes[name] = set_params(default, value, key)
        else:
            allow_inf = bool(fields[name].metadata.get("allow_inf", False))
            changes[name] = check_field(default, value, key, allow_inf)
    return params.replace(**changes)
