from decimal import Decimal, ROUND_HALF_UP


def parse_amount(text: str) -> int:
    """Parses a decimal amount such as "1,234.50" into cents."""
    value = Decimal(text.strip().replace(",", ""))
    return int((value * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def format_cents(cents: int, symbol: str = "$") -> str:
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{symbol}{cents // 100:,}.{cents % 100:02d}"
