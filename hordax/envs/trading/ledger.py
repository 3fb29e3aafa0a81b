"""Pure, jittable trading arithmetic: transaction costs and FinRL's share ledger.

Costs of trading ``n >= 0`` shares at ``price`` (one formula; a "cost model" is a choice of
which coefficients are non-zero, so all of them live in env params and can be vmapped):

    cost(n) = fixed * [n > 0] + pct * n * price + impact * sigma * sqrt(n / adv) * n * price

- proportional: ``pct`` only (FinRL: 0.1 % buy and sell);
- fixed + proportional: ``fixed`` dollars per order plus ``pct``;
- square-root market impact: ``impact`` (the ``Y`` of the square-root law) times the daily
  volatility ``sigma`` times ``sqrt(n / adv)`` (``adv`` average daily volume in shares); 0
  where ``adv`` is 0 (close-only data).

The ledger (:func:`execute_orders`) follows FinRL's ``StockTradingEnv``: integer orders, all
sells first (sell at most the holdings; under turbulence sell everything and buy nothing),
then buys one asset at a time in decreasing order of the integer order (ties: higher asset
index first, as FinRL's ``np.argsort(actions)[::-1]``), each capped by the cash left.
Two guards keep cash >= 0: a sale whose cost exceeds its proceeds is skipped, and a buy is
the largest ``n`` with ``n * price + cost(n) <= cash`` (closed form for the linear terms;
bisection on integers when the impact term overshoots that bound; ``0`` if no ``n`` fits).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def trade_cost(n, price, pct, fixed, impact, sigma, adv):
    """Cost (f32, dollars) of trading ``n >= 0`` shares; all arguments broadcast."""
    n = jnp.asarray(n, jnp.float32)
    safe_adv = jnp.where(adv > 0, adv, 1.0)
    impact_term = jnp.where(adv > 0, impact * sigma * jnp.sqrt(n / safe_adv), 0.0)
    return jnp.where(n > 0, fixed, 0.0) + (pct + impact_term) * n * price


def execute_orders(
    cash,
    holdings,
    orders,
    price,
    sigma,
    adv,
    *,
    buy_pct,
    sell_pct,
    fixed,
    impact,
    liquidate,
):
    """Execute integer share ``orders f32[N]`` (sell < 0 < buy) at ``price f32[N]``.

    Args:
        cash: f32 ``[]``; holdings: f32 ``[N]`` (integer counts).
        orders: f32 ``[N]`` integer share orders.
        price, sigma, adv: f32 ``[N]`` close, daily volatility, average daily volume.
        buy_pct, sell_pct, fixed, impact: cost coefficients (see module docstring).
        liquidate: bool ``[]``; sell all holdings and buy nothing (turbulence).

    Returns:
        ``(cash, holdings, sold f32[N], bought f32[N], cost f32[])``.
    """
    want_sell = jnp.where(liquidate, holdings, jnp.minimum(jnp.maximum(-orders, 0.0), holdings))
    sell_cost = trade_cost(want_sell, price, sell_pct, fixed, impact, sigma, adv)
    sold = jnp.where(want_sell * price >= sell_cost, want_sell, 0.0)
    sell_cost = jnp.where(sold > 0, sell_cost, 0.0)
    cash = cash + jnp.sum(sold * price - sell_cost)
    holdings = holdings - sold

    want_buy = jnp.where(liquidate, 0.0, jnp.maximum(orders, 0.0))
    # FinRL's buy order: np.argsort(orders)[::-1], i.e. the largest integer order first and,
    # among equal orders, the higher asset index first. As a rank and a one-hot permutation
    # (no sort, no gathers: cheaper under vmap and exact, since x * 1 + 0 + ... = x).
    idx = jnp.arange(orders.shape[0])
    before = (orders[None, :] > orders[:, None]) | (
        (orders[None, :] == orders[:, None]) & (idx[None, :] > idx[:, None])
    )
    rank = jnp.sum(before, axis=1)  # rank[i]: position of asset i in the buy order
    perm = (rank[None, :] == idx[:, None]).astype(jnp.float32)  # perm[k, i] = rank[i] == k

    def buy_one(cash, x):
        p, w, sig, a = x

        def total_of(n):
            c = trade_cost(n, p, buy_pct, fixed, impact, sig, a)
            return n * p + c, c

        # the linear terms alone bound n from above; total_of is increasing in n, so the
        # largest affordable n is found by bisection on integers in [lo, hi] (lo affordable,
        # hi the bound). The proportional shrink is usually affordable and brackets it
        # tightly; with proportional costs only, the bound itself is affordable (no loop).
        hi = jnp.minimum(w, jnp.floor(jnp.maximum(cash - fixed, 0.0) / (p * (1.0 + buy_pct))))
        total_hi, _ = total_of(hi)
        shrunk = jnp.floor(hi * cash / jnp.maximum(total_hi, 1e-30))
        lo = jnp.where(total_of(shrunk)[0] <= cash, jnp.minimum(shrunk, hi), 0.0)
        lo = jnp.where(total_hi <= cash, hi, lo)

        def bisect(bounds):
            lo, hi = bounds
            mid = jnp.floor(0.5 * (lo + hi))
            fits = total_of(mid)[0] <= cash
            return jnp.where(fits, mid, lo), jnp.where(fits, hi, mid)

        lo, _ = jax.lax.while_loop(lambda b: b[1] - b[0] > 1.0, bisect, (lo, hi))
        n = lo
        total, c = total_of(n)
        ok = (total <= cash) & (n > 0)
        # cash - total >= 0 exactly in float32 because total <= cash
        return cash - jnp.where(ok, total, 0.0), (jnp.where(ok, n, 0.0), jnp.where(ok, c, 0.0))

    def to_order(x):
        return jnp.sum(perm * x[None, :], axis=1)

    xs = (to_order(price), to_order(want_buy), to_order(sigma), to_order(adv))
    cash, (n_sorted, c_sorted) = jax.lax.scan(buy_one, cash, xs)
    bought = jnp.sum(perm * n_sorted[:, None], axis=0)
    cost = jnp.sum(sell_cost) + jnp.sum(c_sorted)
    return cash, holdings + bought, sold, bought, cost
