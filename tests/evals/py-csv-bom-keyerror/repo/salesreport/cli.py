import argparse
import sys

from .reader import read_rows
from .summary import summarize, top_reps


def _money(cents):
    return f"{cents / 100:,.2f}"


def main(argv=None, out=None):
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="salesreport")
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=3)
    args = parser.parse_args(argv)

    rows = read_rows(args.csv)
    totals = summarize(rows)
    print("Sales by region", file=out)
    for region, cents in totals.items():
        print(f"  {region:<16}{_money(cents):>14}", file=out)
    print(f"Top {args.top} reps", file=out)
    for rep, cents in top_reps(rows, args.top):
        print(f"  {rep:<16}{_money(cents):>14}", file=out)
    return 0
