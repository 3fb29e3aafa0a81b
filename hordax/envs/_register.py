"""Registration of hordax's own environments (lazy entry points: no family is imported)."""

from hordax.envs.registry import register

register("Debug-PointMass-v0", "hordax.envs.debug.point_mass:PointMass")
register("Debug-MultiPointMass-v0", "hordax.envs.debug.multi_point_mass:MultiPointMass")
register("Aerial-Hover-v0", "hordax.envs.aerial.hover:Hover")
register("Aerial-Track-v0", "hordax.envs.aerial.track:Track")
register("Aerial-Navigate-v0", "hordax.envs.aerial.navigate:Navigate")
register("Aerial-MultiHover-v0", "hordax.envs.aerial.multi_hover:MultiHover")
