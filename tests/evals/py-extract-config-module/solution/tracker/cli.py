import argparse
import sys

from .store import Store
from .config import load_config


def main(argv=None, out=sys.stdout):
    parser = argparse.ArgumentParser(prog="tracker")
    parser.add_argument("--config", default="tracker.json")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add")
    add.add_argument("title")
    add.add_argument("--priority")
    sub.add_parser("list")
    args = parser.parse_args(argv)

    cfg = load_config(args.config)
    store = Store(cfg["data_dir"])
    if args.command == "add":
        issue = store.add(args.title, args.priority or cfg["default_priority"])
        print(issue["slug"], file=out)
    else:
        for issue in store.all():
            print(f"{issue['slug']:<30} {issue['status']:<12} {issue['priority']}", file=out)
    return 0
