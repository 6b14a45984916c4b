from collections import defaultdict

from .reader import parse_amount


def summarize(rows):
    """Totals sales per region, in cents.

    Returns a dict mapping each region (as written in the file, trimmed) to its total,
    ordered from the largest total to the smallest.
    """
    totals = defaultdict(int)
    for row in rows:
        region = (row.get("region") or "unknown").strip()
        totals[region] += parse_amount(row["amount"])
    return dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))


def top_reps(rows, n=3):
    totals = defaultdict(int)
    for row in rows:
        totals[row["rep"].strip()] += parse_amount(row["amount"])
    return sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
