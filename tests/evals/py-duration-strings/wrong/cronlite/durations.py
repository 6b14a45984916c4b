import re

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def parse_duration(text: str) -> float:
    """Parses "90s", "1h30m", "1.5h", "250ms" or a bare number of seconds into seconds."""
    s = text.strip()
    if _NUMBER.fullmatch(s):
        return float(s)
    parts = _PART.findall(s)
    if not parts:
        raise ValueError(f"invalid duration {text!r}")
    return float(sum(float(n) * _UNITS[u] for n, u in parts))


def format_duration(seconds: float) -> str:
    """Formats seconds compactly: 5400 -> "1h30m", 0.25 -> "250ms"."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    out = []
    rest = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            out.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(out)
