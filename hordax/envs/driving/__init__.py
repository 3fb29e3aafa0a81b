"""Driving family: multi-agent driving on real road maps and procedural layouts (generated
traffic), and GPUDrive JSON scenes (log replay), in pure JAX. See ``docs/driving.md``.

- :class:`~hordax.envs.driving.env.Drive` / :class:`~hordax.envs.driving.env.DriveLog`: the envs;
- ``dynamics.py`` (vehicle models, IDM), ``geometry.py`` (boxes, segments, quads),
  ``observation.py``, ``render.py``;
- scenes: ``maps.py`` (the shipped CommonRoad maps), ``procedural.py``, ``gpudrive_json.py``,
  built by ``roadgraph.py`` and stacked in ``scene.py``; ``expert.py``: a scripted driver.

Nothing here is imported by ``import hordax``; the registry imports ``env`` lazily.
"""
