"""Debug family: small, fast, fully specified envs that exercise the whole protocol.

``Debug-PointMass-v0`` (single agent, continuous force) and ``Debug-MultiPointMass-v0``
(N agents, per-agent goals, agent masks). Used by the contract suite, the Gymnasium
adapter tests and learning tests; also a template for new families: pure dynamics in
``dynamics.py``, one task per module, ``render`` returning ``uint8[H, W, 3]``.
"""
