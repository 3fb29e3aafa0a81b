"""Host-side validation helper shared by the agent and trainer configs.

Every check raises with the same message shape, ``"<key>=<value>: <rule>"``, so a user
sees which setting is wrong, what it was and what is allowed.
"""

from __future__ import annotations


def need(
    ok: bool,
    key: str,
    value: object,
    rule: str,
    *,
    prefix: str = "",
    error: type[Exception] = ValueError,
) -> None:
    """Raise ``error(f"{prefix}{key}={value}: {rule}")`` unless ``ok``."""
    if not ok:
        raise error(f"{prefix}{key}={value}: {rule}")
