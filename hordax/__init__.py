"""hordax: thousands of RL environments on one accelerator, trained in one jitted program.

import hordax
env, params = hordax.make("CartPole-v1")
"""

from hordax.envs import make, register, registered_envs, to_gymnasium

__version__ = "0.1.0"

__all__ = ["__version__", "make", "register", "registered_envs", "to_gymnasium"]
