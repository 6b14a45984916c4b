from .lines import LineItem
from .totals import Totals, compute_totals

__all__ = ["LineItem", "Totals", "compute_totals"]
