import csv
from decimal import Decimal

REQUIRED = ("region", "rep", "amount")


def read_rows(path):
    """Reads the sales CSV at `path` into a list of dicts keyed by the header row."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def parse_amount(text):
    return int((Decimal(text.replace(",", "").strip() or "0") * 100).to_integral_value())
