import re

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def parse_duration(text: str) -> float:
    """Parses "90s", "1h30m", "1.5h", "250ms" or a bare number of seconds into seconds."""
    s = text.strip()
    if _NUMBER.fullmatch(s):
        return float(s)
    if not s:
        raise ValueError("empty duration")
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            raise ValueError(f"invalid duration {text!r}")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total


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
