from .cache import Cache
from .decorators import cached

__all__ = ["Cache", "cached"]
