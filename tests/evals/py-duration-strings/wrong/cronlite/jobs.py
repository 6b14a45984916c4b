from dataclasses import dataclass

from .durations import parse_duration


class JobError(ValueError):
    pass


@dataclass(frozen=True)
class Job:
    name: str
    command: str
    interval: float
    timeout: float = 60.0


def _seconds(spec: dict, field: str, default=None) -> float:
    value = spec.get(field, default)
    if value is None:
        raise JobError(f"{field}: missing")
    if isinstance(value, str):
        try:
            value = parse_duration(value)
        except ValueError as e:
            raise JobError(f"{field}: {e}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JobError(f"{field}: expected seconds or a duration like 1h30m, got {value!r}")
    if value <= 0:
        raise JobError(f"{field}: must be positive")
    return float(value)


def load_job(spec: dict) -> Job:
    name = spec.get("name")
    if not name:
        raise JobError("name: missing")
    command = spec.get("command")
    if not command:
        raise JobError(f"{name}: command: missing")
    return Job(
        name=name,
        command=command,
        interval=_seconds(spec, "interval"),
        timeout=_seconds(spec, "timeout", 60.0),
    )
