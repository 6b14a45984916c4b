import csv
import io

from .store import Store
from .config import load_config


def export_csv(config_path, status=None):
    """Exports issues (optionally only those in `status`) as CSV text."""
    cfg = load_config(config_path)
    if status is not None and status not in cfg["statuses"]:
        raise ValueError(f"unknown status {status!r}")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["slug", "title", "status", "priority"])
    for issue in Store(cfg["data_dir"]).all():
        if status is None or issue["status"] == status:
            writer.writerow([issue["slug"], issue["title"], issue["status"], issue["priority"]])
    return buf.getvalue()
