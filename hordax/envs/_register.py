"""Registration of hordax's own environments (lazy entry points: no family is imported)."""

from hordax.envs.registry import register

register("Debug-PointMass-v0", "hordax.envs.debug.point_mass:PointMass")
register("Debug-MultiPointMass-v0", "hordax.envs.debug.multi_point_mass:MultiPointMass")
register("StockTrading-v0", "hordax.envs.trading.stock:StockTrading")
register("StockPortfolio-v0", "hordax.envs.trading.portfolio:StockPortfolio")
register("CryptoTrading-v0", "hordax.envs.trading.crypto:CryptoTrading")
