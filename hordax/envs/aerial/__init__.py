"""Aerial family: quadrotors in pure JAX (the Aerial Gym Simulator without Isaac Gym).

- ``dynamics``: 6-DoF rigid body, quaternion attitude, motor lag, drag, disturbances (RK4).
- ``controllers``: the Lee geometric SE(3) family (position ... direct motor thrusts).
- tasks: ``hover`` (``Aerial-Hover-v0``), ``track`` (``Aerial-Track-v0``).
"""
