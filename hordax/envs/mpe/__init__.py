"""The multi-agent particle worlds (MPE): PettingZoo MPE's nine scenarios in JAX.

Ids ``MPE-<Scenario>-v0`` (discrete actions) and ``MPE-<Scenario>-Continuous-v0``
(PettingZoo's ``continuous_actions=True``), all built by
:func:`hordax.envs.mpe.scenarios.make_scenario`; see ``docs/mpe.md``. The physics and shared
pieces live in :mod:`hordax.envs.mpe.world`, the env protocol glue in
:mod:`hordax.envs.mpe.base`, one module per scenario. This module imports nothing, so the
registry can read :data:`SCENARIOS` without loading a scenario.
"""

#: scenario name (the id's middle part) -> ``"module:Class"``. SimpleTag comes first: the
#: env contract suite runs its full checks on the first registered id of an entry point,
#: and simple_tag has teams of different sizes, contacts, speed caps and every params field.
SCENARIOS = {
    "SimpleTag": "hordax.envs.mpe.simple_tag:SimpleTag",
    "Simple": "hordax.envs.mpe.simple:Simple",
    "SimpleAdversary": "hordax.envs.mpe.simple_adversary:SimpleAdversary",
    "SimpleCrypto": "hordax.envs.mpe.simple_crypto:SimpleCrypto",
    "SimplePush": "hordax.envs.mpe.simple_push:SimplePush",
    "SimpleReference": "hordax.envs.mpe.simple_reference:SimpleReference",
    "SimpleSpeakerListener": "hordax.envs.mpe.simple_speaker_listener:SimpleSpeakerListener",
    "SimpleSpread": "hordax.envs.mpe.simple_spread:SimpleSpread",
    "SimpleWorldComm": "hordax.envs.mpe.simple_world_comm:SimpleWorldComm",
}
