import json

DEFAULTS = {
    "data_dir": ".tracker",
    "default_priority": "normal",
    "statuses": ["open", "in-progress", "closed"],
    "port": 8765,
}


def load_config(path):
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
