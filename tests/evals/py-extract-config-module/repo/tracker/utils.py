import json
import re
from datetime import datetime, timezone

DEFAULTS = {
    "data_dir": ".tracker",
    "default_priority": "normal",
    "statuses": ["open", "in-progress", "closed"],
    "port": 8765,
}


def load_cfg(path):
    """Reads the JSON config at `path` over the defaults. A missing file gives the defaults."""
    cfg = dict(DEFAULTS)
    try:
        with open(path, encoding="utf-8") as f:
            cfg.update(json.load(f))
    except FileNotFoundError:
        pass
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown config keys: {', '.join(sorted(unknown))}")
    return cfg


def slugify(title):
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:48] or "untitled"


def now_iso():
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
