"""The Lee position controller as a scripted policy through ``Aerial-Track-v0``: the reference
for a learned tracking policy's error.

    PYTHONPATH=$PWD python benchmarks/aerial_track_reference.py [EPISODES] [lead]

The env is built with ``controller="position"``; each step the action asks for the
setpoint ``reference(t + dt)`` (plus ``k_vel / k_pos * v_ref`` with ``lead``: the Lee law's
velocity feed-forward expressed through the position interface), yaw held. Prints the mean
tracking error over whole episodes and after the first 2 s, and the crash rate.
"""

import math
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import hordax
from hordax import strict_json
from hordax.envs.aerial.track import reference

n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
LEAD = len(sys.argv) > 2 and sys.argv[2] == "lead"
env, params = hordax.make("Aerial-Track-v0", controller="position")
T = params.max_steps_in_episode


def yaw_of(q):
    w, x, y, z = q
    return jnp.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def episode(key):
    k0, key = jax.random.split(key)
    obs, st = env.reset_env(k0, params)

    def body(c, k):
        st, done, esum, n_alive, crashed = c
        t = (st.time + 1).astype(jnp.float32) * params.quad.dt
        ref, vref, _ = reference(t, st.phase, params)
        if LEAD:  # velocity feed-forward through the position interface: at steady tracking,
            # the Lee law's k_vel (v - v_ref) term is cancelled by k_pos * (k_vel / k_pos) v_ref
            ref = ref + params.ctrl.k_vel / params.ctrl.k_pos * vref
        a = jnp.concatenate(
            [(ref - st.quad.pos) / params.ctrl.max_pos_offset, yaw_of(st.quad.quat)[None] / math.pi]
        )
        a = jnp.clip(a, -1, 1)
        obs, st2, r, term, info = env.step_env(k, st, a, params)
        keep = ~done
        st = jax.tree.map(lambda x, y: jnp.where(keep, y, x), st, st2)
        late = st2.time > 200
        esum = esum + jnp.where(keep, info["metrics"]["tracking_error"], 0.0) * jnp.array(
            [1.0, late]
        )
        n_alive = n_alive + jnp.where(keep, 1.0, 0.0) * jnp.array([1.0, late])
        return (st, done | term, esum, n_alive, crashed | (keep & term)), None

    init = (st, jnp.bool_(False), jnp.zeros(2), jnp.zeros(2), jnp.bool_(False))
    (st, done, esum, n_alive, crashed), _ = jax.lax.scan(body, init, jax.random.split(key, T))
    return esum / n_alive, crashed


err, crashed = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(7), n))
err = np.asarray(err)
print(
    strict_json.dumps(
        {
            "policy": "Lee position controller via env action, setpoint reference(t+dt)"
            + (" + k_vel/k_pos v_ref" if LEAD else ""),
            "episodes": n,
            "mean_tracking_error_all": float(err[:, 0].mean()),
            "mean_tracking_error_after_2s": float(err[:, 1].mean()),
            "crash_rate": float(np.mean(crashed)),
            "load": os.getloadavg()[0],
        }
    )
)
