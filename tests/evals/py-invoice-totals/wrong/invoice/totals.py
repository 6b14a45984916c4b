from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable

from .lines import LineItem


@dataclass(frozen=True)
class Totals:
    subtotal: int
    discount: int
    tax: int
    total: int


def _percent_of(cents: int, percent) -> int:
    return round(cents * float(percent) / 100)


def compute_totals(lines: Iterable[LineItem], tax_percent, discount_percent=0) -> Totals:
    """Totals an invoice. The discount is taken off the subtotal first and tax is charged on
    what remains; each is rounded to the nearest cent, halves up."""
    subtotal = sum(line.amount() for line in lines)
    discount = _percent_of(subtotal, discount_percent)
    tax = _percent_of(subtotal - discount, tax_percent)
    return Totals(subtotal, discount, tax, subtotal - discount + tax)
