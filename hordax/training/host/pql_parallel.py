"""PQL, parallel mode (``agent.mode=parallel``): actor, V-learner and P-learner run
concurrently, each a jitted program committed to its own device
(:func:`hordax.training.host.sharding.pql_role_devices`), driven by its own host thread (a
jitted call releases the GIL, so the three overlap), exchanging parameters and data:

- **actor**: rollouts of ``T = trainer.rollout_length`` steps of all envs with the newest
  actor parameters it has received (mixed exploration; uniform actions for the first
  ``warmup_updates`` rollouts); n-step rows (raw observations; the last ``n - 1`` steps of a
  rollout wait for the next, as in the synchronous trainer) go to the V-learner, their
  observations to the P-learner, and the running observation statistics to both;
- **V-learner**: owns the replay buffer; inserts new rows, runs critic updates in groups
  of ``beta_pv`` (sampled batches normalized with the newest statistics), publishes the
  critic parameters to the P-learner;
- **P-learner**: owns an observation-only copy of the buffer; one actor update per group,
  against the newest critic; publishes the actor parameters to the actor and V-learner.

Each jitted learner call does ``k = agent.parallel_groups_per_call`` units of work (the
V-learner ``k`` groups, the P-learner ``k`` actor updates against one critic), which
amortizes the per-call host overhead when single updates are tiny.

The math is the synchronous trainer's (:class:`~hordax.training.trainers.pql.PQLTrainer`'s
``critic_batch``, :meth:`PQLAgent.critic_update <hordax.agents.pql.PQLAgent.critic_update>`,
``actor_update``, ``n_step_transitions``, ``update_stats``); only the schedule differs.

Ratio control (as in the PQL paper, a role ahead of its target waits on a condition
variable). With ``C`` collection steps, ``Nc`` critic and ``Na`` actor updates so far
(``beta_av * C`` is evaluated as the integer ``round(beta_av * T) * C / T``, the
synchronous schedule's count, so float rounding can never leave a role waiting for an
update that the integer total does not owe):

- the actor may start a rollout when ``Nc >= beta_av * (C - T)``: the critic has done the
  updates of all data but the newest rollout (the actor runs at most one rollout ahead);
- the V-learner may run call ``j`` (``k`` groups of ``beta_pv`` updates) when
  ``Nc + k beta_pv <= beta_av * C`` (enough data) and ``Na >= (j - 1) k`` (at most one call
  ahead of the P-learner);
- the P-learner may run call ``i`` (actor updates ``i k + 1 .. (i + 1) k``) when
  ``Nc >= beta_pv k (i + 1)``.

After the actor's last rollout the learners finish the updates that data is owed, so a
run performs exactly the synchronous trainer's update counts. The achieved ratios are
measured at every chunk boundary (``ratio_av = Nc / C``, ``ratio_pv = Nc / Na``) and at the
end of collection, next to each role's busy and waiting time, in ``metrics.jsonl`` and the
JSON summary.

Not a pure ``train(key)`` (three host threads), and with ``agent.parallel_schedule=async``
(the default) not bitwise deterministic: which actor parameters a rollout uses and which
critic an actor update sees depend on timing. ``agent.parallel_schedule=serial`` runs one
role at a time: when every unfinished role waits, the first ready one in
:data:`SERIAL_ORDER` goes (P-learner, V-learner, actor: critic and actor updates alternate
as in the synchronous trainer, and the actor collects once the learners have done all the
updates its data is owed). That is one of the interleavings the async schedule allows, so
the same programs, hand-overs and counts run, and a run is reproducible bit for bit (for
debugging, and for tests that must not depend on the machine's timing); it gives up the
overlap.
Not supported (clear errors in :func:`hordax.training.trainers.validate`): populations,
checkpoints and resume; ``mesh`` settings are not used. The host loop
(:mod:`hordax.training.host.loop`) runs it through :class:`ParallelDriver`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hordax.training.core import replay
from hordax.training.core.metrics import episode_metrics
from hordax.training.core.normalization import NormalizedPolicy, normalize, update_stats
from hordax.training.core.report import NonFiniteError, summarize_chunk
from hordax.training.core.rollout import rollout
from hordax.training.host import sharding
from hordax.training.trainers.pql import OffPolicyState, PQLTrainer, n_step_transitions

ROLES = ("actor", "v_learner", "p_learner")
SERIAL_ORDER = ("p_learner", "v_learner", "actor")  # agent.parallel_schedule=serial: priority


class _AbortError(Exception):
    """Another role failed (or the host asked to stop): leave the role loop."""


@dataclass
class _Shared:
    """Host-side state of a parallel run, guarded by ``cond``."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    collection_steps: int = 0  # C: collection steps (one step of all envs) so far
    critic_updates: int = 0  # Nc
    actor_updates: int = 0  # Na
    v_inbox: list = field(default_factory=list)  # n-step rows on the V device
    p_inbox: list = field(default_factory=list)  # observations on the P device
    stats_v: Any = None  # newest obs statistics, on the V / P device
    stats_p: Any = None
    actor_for_actor: Any = None  # newest actor params, on the actor / V device
    actor_for_v: Any = None
    critic_for_p: Any = None  # newest critic params on the P device
    last_v: Any = None  # newest critic-update metrics
    last_p: Any = None  # newest actor-update metrics
    error: BaseException | None = None
    waiting: dict = field(default_factory=dict)  # serial schedule: role -> its ready() test
    done: set = field(default_factory=set)  # roles whose loop has ended
    busy_s: dict = field(default_factory=lambda: dict.fromkeys(ROLES, 0.0))
    wait_s: dict = field(default_factory=lambda: dict.fromkeys(ROLES, 0.0))


@dataclass(frozen=True)
class _Learner:
    """What differs between the V- and the P-learner's loops (:meth:`ParallelPQL._learn`);
    the strings name :class:`_Shared` fields."""

    role: str
    calls: int  # jitted calls in the run
    ready: Callable[[int], bool]  # may call j run (evaluated under sh.cond)
    inbox: str  # data sent by the actor: (rows, count) pairs on this role's device
    stats: str  # the newest observation statistics on this role's device
    receive: tuple[str, str]  # (params key, field): the other learner's newest parameters
    step: Callable[..., Any]  # (state, buffer, stats, key) -> (state, metrics)
    key: jax.Array
    send: Callable[[Any], dict]  # state -> {field: parameters placed for their receivers}
    count: str  # the update counter this role advances
    per_call: int  # updates per call
    last: str  # where this role's newest metrics go


@dataclass
class ParallelResult:
    """What :meth:`ParallelPQL.run` returns."""

    state: OffPolicyState  # final state: actor from the P-learner, critics from the V-learner
    rows: list[dict]  # one row per chunk (see :meth:`ParallelPQL.run`)
    summary: dict  # counts, achieved ratios, busy/wait seconds, role devices
    placed: dict  # role -> sorted device names its outputs actually lived on


class ParallelPQL:
    """PQL's parallel mode over an existing :class:`PQLTrainer` (env stack, agent, sizes).

    Args:
        trainer: the synchronous trainer whose math and sizes are used.
        num_rollouts: actor rollouts in the run (``resolved.num_updates``).
        chunk_rollouts: rollouts per logged row (``resolved.chunk_updates``).
        devices: candidate devices (default ``jax.devices()``), assigned to the roles by
            :func:`~hordax.training.host.sharding.pql_role_devices`.
    """

    def __init__(
        self,
        trainer: PQLTrainer,
        num_rollouts: int,
        chunk_rollouts: int,
        devices: list | None = None,
    ):
        self.t = trainer
        self.acfg = trainer.agent_cfg
        self.agent = trainer.agent
        self.T = int(trainer.cfg.rollout_length)
        self.num_envs = int(trainer.cfg.num_envs)
        self.num_rollouts, self.chunk_rollouts = int(num_rollouts), int(chunk_rollouts)
        self.devices = dict(zip(ROLES, sharding.pql_role_devices(devices), strict=True))
        self.k = int(self.acfg.parallel_groups_per_call)  # units of work per learner call
        self.serial = self.acfg.parallel_schedule == "serial"
        self.group = int(self.acfg.beta_pv) * self.k  # critic updates per V-learner call
        self.critic_total = trainer.critic_updates * self.num_rollouts
        self.actor_total = self.critic_total // int(self.acfg.beta_pv)
        acfg, agent, t = self.acfg, self.agent, trainer

        def collect(act_state, env_state, obs, stats, pending, key):
            key, k = jax.random.split(key)
            env_state, obs, tr = rollout(
                t.env, t.env_params, NormalizedPolicy(agent, stats), act_state, env_state,
                obs, k, self.T,
            )  # fmt: skip
            rows, count, pending = n_step_transitions(
                tr, pending, acfg.gamma, acfg.n_step, acfg.reward_scale
            )
            stats = update_stats(stats, tr, obs)
            return env_state, obs, stats, pending, key, (rows, count), episode_metrics(tr.info)

        def critic_group(state, buffer, stats, key):
            def step(st, k):
                k_sample, k_noise = jax.random.split(k)
                return agent.critic_update(st, t.critic_batch(buffer, stats, k_sample), k_noise)

            st, m = jax.lax.scan(step, state, jax.random.split(key, self.group))
            return st, jax.tree.map(jnp.mean, m)

        def actor_step(state, obs_buffer, stats, key):
            def step(st, k):
                obs = normalize(replay.sample(obs_buffer, k, acfg.batch_size), stats)
                return agent.actor_update(st, obs)

            st, m = jax.lax.scan(step, state, jax.random.split(key, self.k))
            return st, jax.tree.map(jnp.mean, m)

        self._collect = jax.jit(collect)
        self._critic_group = jax.jit(critic_group)
        self._actor_step = jax.jit(actor_step)
        self._insert = jax.jit(replay.add)

    # --- helpers -------------------------------------------------------------------------
    def _wait(self, sh: _Shared, role: str, ready: Callable[[], bool]) -> None:
        t0 = time.perf_counter()
        with sh.cond:
            if self.serial:
                sh.waiting[role] = ready
                sh.cond.notify_all()
            while sh.error is None and not self._may_go(sh, role, ready):
                sh.cond.wait(timeout=1.0)
            sh.waiting.pop(role, None)
            if sh.error is not None:
                raise _AbortError
        sh.wait_s[role] += time.perf_counter() - t0

    def _may_go(self, sh: _Shared, role: str, ready: Callable[[], bool]) -> bool:
        """Under ``sh.cond``: may ``role`` start its next step. Async: when it is ready.
        Serial: when no role is running (every unfinished role waits) and ``role`` is the
        first ready one in :data:`SERIAL_ORDER`."""
        if not self.serial:
            return ready()
        if any(r not in sh.waiting and r not in sh.done for r in ROLES):
            return False  # a role is running (or has not reached its first wait yet)
        first = next((r for r in SERIAL_ORDER if r in sh.waiting and sh.waiting[r]()), None)
        if first is None:  # cannot happen with the ratio rules above; fail, don't hang
            raise RuntimeError(f"parallel schedule: no role can go (waiting: {sorted(sh.waiting)})")
        return first == role

    def _busy(self, sh: _Shared, role: str, fn: Callable[..., Any], *args: Any) -> Any:
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        sh.busy_s[role] += time.perf_counter() - t0
        return out

    def _role(self, sh: _Shared, role: str, body: Callable[[], None]) -> Callable[[], None]:
        def target() -> None:
            try:
                body()
            except _AbortError:
                pass
            except BaseException as e:  # noqa: BLE001 (re-raised by the host thread)
                with sh.cond:
                    sh.error = sh.error or e
                    sh.cond.notify_all()
            finally:
                with sh.cond:
                    sh.done.add(role)
                    sh.cond.notify_all()

        return target

    def _learn(self, sh: _Shared, state: Any, buffer: Any, spec: _Learner) -> tuple[Any, Any]:
        """A learner role's loop: per call ``j``, wait until ``spec.ready(j)``; drain its
        inbox into its buffer; take the newest statistics and the other learner's newest
        parameters; run ``spec.step``; hand its parameters and metrics over under
        ``sh.cond``. Returns the final ``(state, buffer)``."""
        name, attr = spec.receive
        for j in range(spec.calls):
            self._wait(sh, spec.role, lambda j=j: spec.ready(j))
            with sh.cond:
                inbox = getattr(sh, spec.inbox)
                setattr(sh, spec.inbox, [])
                stats, params = getattr(sh, spec.stats), getattr(sh, attr)
            for data, count in inbox:
                buffer = self._busy(sh, spec.role, self._insert, buffer, data, count)
            state = state.replace(params={**state.params, name: params})
            state, m = self._busy(
                sh, spec.role, spec.step, state, buffer, stats, jax.random.fold_in(spec.key, j)
            )
            sent = spec.send(state)  # device transfers outside the lock
            with sh.cond:
                setattr(sh, spec.count, getattr(sh, spec.count) + spec.per_call)
                for k, v in {**sent, spec.last: m}.items():
                    setattr(sh, k, v)
                sh.cond.notify_all()
        return state, buffer

    # --- the run -------------------------------------------------------------------------
    def run(self, key: jax.Array, on_row: Callable[[dict], None] | None = None) -> ParallelResult:
        """Train; ``on_row(row)`` is called on the calling thread after every chunk (see
        :meth:`rows`)."""
        rows = self.rows(key)
        next(rows)  # compiled
        for row in rows:
            if on_row is not None:
                on_row(row)
        return self.result

    def rows(self, key: jax.Array) -> Iterator[dict | None]:
        """Train, yielding on the calling thread ``None`` once every program is compiled
        (before the roles start), then one row per chunk; :attr:`result` is set at the end.
        Closing the generator (or an error) stops the roles.

        A row: ``chunk``, ``env_steps``, ``wall_s`` (since the roles started), the
        chunk's episode statistics as ``run.summarize_chunk`` gives them (``episodes``,
        ``episode_return``, ``episode_length``, task metrics), the
        counts ``collection_steps``, ``critic_updates``, ``actor_updates``, the achieved
        ``ratio_av`` and ``ratio_pv`` at that moment, the newest losses and each role's
        ``busy_s/<role>`` and ``wait_s/<role>`` so far.
        """
        dev = self.devices
        s0 = jax.jit(self.t.init)(key)
        sh = _Shared()
        put = jax.device_put
        # Actor: env, obs, key, statistics and an agent state to act with.
        a_state = put(s0.agent, dev["actor"])
        a_env = put((s0.env_state, s0.obs, s0.obs_stats, s0.pending, s0.key), dev["actor"])
        # V-learner: the agent state (critic side) and the replay buffer.
        v_state = put(s0.agent, dev["v_learner"])
        v_buffer = put(s0.buffer, dev["v_learner"])
        # P-learner: the agent state (actor side) and an observation-only buffer.
        p_state = put(s0.agent, dev["p_learner"])
        obs_row = jnp.zeros(self.t.obs_shape, jnp.float32)
        p_buffer = put(replay.init_buffer(obs_row, self.acfg.buffer_size), dev["p_learner"])
        sh.stats_v = put(s0.obs_stats, dev["v_learner"])
        sh.stats_p = put(s0.obs_stats, dev["p_learner"])
        sh.actor_for_actor = a_state.params["actor"]
        sh.actor_for_v = v_state.params["actor"]
        sh.critic_for_p = p_state.params["critic"]
        key_v, key_p = jax.random.split(jax.random.fold_in(key, 1))
        k_v, k_p = put(key_v, dev["v_learner"]), put(key_p, dev["p_learner"])
        # Compile every program on its device before the clock starts (jit caches per
        # device), so busy times and wall_s measure running, not compiling.
        t_compile = time.perf_counter()
        rows0, count0 = self._collect(a_state, *a_env)[5]
        self._insert(v_buffer, *put((rows0, count0), dev["v_learner"]))
        self._insert(p_buffer, *put((rows0.obs, count0), dev["p_learner"]))
        self._critic_group(v_state, v_buffer, sh.stats_v, k_v)
        jax.block_until_ready(self._actor_step(p_state, p_buffer, sh.stats_p, k_p))
        self.compile_s = time.perf_counter() - t_compile
        yield None
        rows_out: list[dict] = []
        final: dict[str, Any] = {}
        pending: list[dict] = []  # chunk rows made by the actor, handed to the host thread
        T, group, kk = self.T, self.group, self.k
        # Integer ratio targets: ``per`` = round(beta_av * T) critic updates per rollout, as
        # the synchronous schedule (comparing with the float beta_av * steps could stay one
        # rounding step short of the integer total and wait forever).
        per = self.t.critic_updates

        def actor() -> None:
            env_state, obs, stats, pend, k = a_env
            st = a_state
            eps: list[dict] = []
            for r in range(self.num_rollouts):
                self._wait(sh, "actor", lambda r=r: sh.critic_updates >= per * (r - 1))
                with sh.cond:
                    params = sh.actor_for_actor
                st = st.replace(params={**st.params, "actor": params}, update=jnp.int32(r))
                env_state, obs, stats, pend, k, (rows, count), ep = self._busy(
                    sh, "actor", self._collect, st, env_state, obs, stats, pend, k
                )
                rows_v, stats_v = put(((rows, count), stats), dev["v_learner"])
                obs_p, stats_p = put(((rows.obs, count), stats), dev["p_learner"])
                with sh.cond:
                    sh.v_inbox.append(rows_v)
                    sh.p_inbox.append(obs_p)
                    sh.stats_v, sh.stats_p = stats_v, stats_p
                    sh.collection_steps += T
                    snap = (sh.collection_steps, sh.critic_updates, sh.actor_updates)
                    sh.cond.notify_all()
                eps.append(ep)
                if (r + 1) % self.chunk_rollouts == 0:
                    row = self._row(sh, r // self.chunk_rollouts, eps, snap)
                    eps = []
                    with sh.cond:
                        pending.append(row)
                        sh.cond.notify_all()
            with sh.cond:
                final["collection_end"] = (
                    sh.collection_steps,
                    sh.critic_updates,
                    sh.actor_updates,
                    time.perf_counter(),
                )
                final["actor"] = (env_state, obs, stats, pend, k)
                final["actor_rows"] = rows

        def v_learner() -> None:
            final["v"] = self._learn(
                sh, v_state, v_buffer, _Learner(
                    role="v_learner", calls=self.critic_total // group,
                    # Enough data for call j, and at most one call ahead of the P-learner.
                    ready=lambda j: (
                        (j + 1) * group <= per * (sh.collection_steps // T)
                        and sh.actor_updates >= (j - 1) * kk
                    ),
                    inbox="v_inbox", stats="stats_v", receive=("actor", "actor_for_v"),
                    step=self._critic_group, key=k_v,
                    send=lambda st: {"critic_for_p": put(st.params["critic"], dev["p_learner"])},
                    count="critic_updates", per_call=group, last="last_v",
                ),
            )  # fmt: skip

        def p_learner() -> None:
            final["p"] = self._learn(
                sh, p_state, p_buffer, _Learner(
                    role="p_learner", calls=self.actor_total // kk,
                    ready=lambda i: sh.critic_updates >= group * (i + 1),
                    inbox="p_inbox", stats="stats_p", receive=("critic", "critic_for_p"),
                    step=self._actor_step, key=k_p,
                    send=lambda st: {
                        "actor_for_actor": put(st.params["actor"], dev["actor"]),
                        "actor_for_v": put(st.params["actor"], dev["v_learner"]),
                    },
                    count="actor_updates", per_call=kk, last="last_p",
                ),
            )[0]  # fmt: skip

        threads = [
            threading.Thread(target=self._role(sh, name, body), name=f"pql-{name}", daemon=True)
            for name, body in zip(ROLES, (actor, v_learner, p_learner), strict=True)
        ]
        self._t0 = time.perf_counter()
        for th in threads:
            th.start()
        try:
            running = True
            while running:
                with sh.cond:
                    running = any(t.is_alive() for t in threads)
                    while not pending and sh.error is None and running:
                        sh.cond.wait(timeout=0.5)
                        running = any(t.is_alive() for t in threads)
                    rows, pending[:] = list(pending), []
                    error = sh.error
                for row in rows:
                    rows_out.append(row)
                    yield row
                if error is not None:
                    raise error
        except BaseException as e:
            with sh.cond:
                sh.error = sh.error or e
                sh.cond.notify_all()
            for th in threads:
                th.join()
            raise
        for th in threads:
            th.join()
        self.result = self._finish(sh, final, rows_out, s0)

    def _row(self, sh: _Shared, chunk: int, eps: list[dict], snap: tuple) -> dict:
        """A chunk row (computed on the actor thread; syncs on the chunk's episode sums)."""
        c, nc, na = snap
        ep = jax.device_get(eps)
        row: dict[str, Any] = {
            "chunk": chunk,
            "env_steps": c * self.num_envs,
            "wall_s": round(time.perf_counter() - self._t0, 3),
        }
        row.update(summarize_chunk({k: np.asarray([e[k] for e in ep]) for k in ep[0]}))
        with sh.cond:
            last = {**(sh.last_v or {}), **(sh.last_p or {})}
            busy, wait = dict(sh.busy_s), dict(sh.wait_s)
        for k, v in jax.device_get(last).items():
            row[k] = float(v)
        row.update(
            collection_steps=c,
            critic_updates=nc,
            actor_updates=na,
            ratio_av=nc / c,
            ratio_pv=nc / na if na else math.nan,
        )
        for name in ROLES:
            row[f"busy_s/{name}"] = round(busy[name], 3)
            row[f"wait_s/{name}"] = round(wait[name], 3)
        return row

    def _finish(self, sh: _Shared, final: dict, rows: list[dict], s0: Any) -> ParallelResult:
        end = time.perf_counter()
        v_state, buffer = final["v"]
        p_state = final["p"]
        env_state, obs, stats, pend, key = final["actor"]
        placed = {
            "actor": _device_names((env_state, obs, stats, final["actor_rows"])),
            "v_learner": _device_names((v_state, buffer)),
            "p_learner": _device_names(p_state),
        }
        home = self.devices["actor"]
        v_state, buffer, p_state = jax.device_put((v_state, buffer, p_state), home)
        agent = v_state.replace(
            params={**v_state.params, "actor": p_state.params["actor"]},
            actor_opt=p_state.actor_opt,
            actor_updates=p_state.actor_updates,
            update=jnp.int32(self.num_rollouts),
        )
        state = OffPolicyState(
            agent, env_state, obs, key, jnp.int32(self.num_rollouts), buffer, stats, pend
        )
        c_end, nc_end, na_end, t_end = final["collection_end"]
        summary = {
            "mode": "parallel",
            "role_devices": {r: str(d) for r, d in self.devices.items()},
            "collection_steps": sh.collection_steps,
            "critic_updates": sh.critic_updates,
            "actor_updates": sh.actor_updates,
            "target_ratio_av": float(self.acfg.beta_av),
            "target_ratio_pv": float(self.acfg.beta_pv),
            "ratio_av": sh.critic_updates / sh.collection_steps,
            "ratio_pv": sh.critic_updates / sh.actor_updates,
            # At the end of collection, before the learners finish what the data is owed.
            "ratio_av_at_collection_end": nc_end / c_end,
            "ratio_pv_at_collection_end": nc_end / na_end if na_end else math.nan,
            "drain_s": round(end - t_end, 3),
            "compile_s": round(self.compile_s, 3),
            "roles_wall_s": round(end - self._t0, 3),
            "busy_s": {r: round(v, 3) for r, v in sh.busy_s.items()},
            "wait_s": {r: round(v, 3) for r, v in sh.wait_s.items()},
        }
        return ParallelResult(state, rows, summary, placed)


def _device_names(tree: Any) -> list[str]:
    return sorted({str(d) for x in jax.tree.leaves(tree) for d in x.devices()})


_FINITE_KEYS = ("critic_loss", "critic_grad_norm", "actor_loss", "actor_grad_norm")


class ParallelDriver:
    """Runs a :class:`PQLTrainer` with ``agent.mode=parallel`` for the host loop (the driver
    interface of :class:`~hordax.training.host.programs.JitDriver`): rows come from the
    actor thread; the NaN guard reads each row's newest losses and the final parameters;
    the summary gets a ``parallel`` section (counts, achieved ratios, busy/wait seconds per
    role, role devices). No checkpoints, resume or populations (rejected by validation)."""

    checkpoints = False

    def __init__(self, cfg: Any, trainer: PQLTrainer):
        resolved = trainer.resolved
        self.trainer = trainer
        self.par = ParallelPQL(trainer, resolved.num_updates, resolved.chunk_updates)
        self.key = jax.random.key(cfg.seed)
        self.devices = len({str(d) for d in self.par.devices.values()})
        self.label = "pql parallel"
        self.compile_s: float | None = None
        self.run_s: float | None = None
        self.summary: dict = {}
        self._rows: Iterator[dict | None] | None = None

    def start(self, ckpt: Any, cfg: Any) -> int:
        return 0

    def compile(self, start_chunk: int, num_chunks: int) -> None:
        self._rows = self.par.rows(self.key)
        next(self._rows)  # the roles' programs are compiled
        self.compile_s = self.par.compile_s

    def chunks(self, start_chunk: int, num_chunks: int) -> Iterator[tuple[int, dict]]:
        assert self._rows is not None
        try:
            for row in self._rows:
                yield row["chunk"], row
        finally:
            self._rows.close()  # stops the roles if the host loop stopped early
        par = self.par.result.summary
        self.run_s = par["roles_wall_s"]
        self.summary = {
            "mode": "parallel",
            "parallel": {k: v for k, v in par.items() if k != "mode"},
        }

    def row(self, row: dict) -> dict:
        return {**row, "sps": row["env_steps"] / row["wall_s"] if row["wall_s"] else math.nan}

    def check_finite(self, row: dict, chunk: int) -> None:
        bad = [k for k in _FINITE_KEYS if k in row and not math.isfinite(row[k])]
        if bad:
            raise NonFiniteError(
                f"non-finite {' and '.join(bad)} by chunk {row['chunk']} (parallel mode; "
                "no checkpoint kept: checkpoints are not supported in parallel mode)"
            )

    def not_kept(self) -> str:
        return ""

    def saved(self) -> dict:
        saved = self.trainer.saved_agent(self.par.result.state)
        if not all(bool(np.all(np.isfinite(x))) for x in jax.tree.leaves(saved["params"])):
            raise NonFiniteError("non-finite parameters at the end (parallel mode)")
        return jax.device_get(saved)
