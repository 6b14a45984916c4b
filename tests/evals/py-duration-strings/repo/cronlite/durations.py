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
