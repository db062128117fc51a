"""Methods the papers compare against (DESIGN.md ``baselines/``)."""
from .fista import FISTA

__all__ = ["FISTA"]
