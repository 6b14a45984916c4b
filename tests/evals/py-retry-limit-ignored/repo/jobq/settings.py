import configparser
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    queue: str = "default"
    retry_limit: int = 3
    backoff_seconds: float = 0.5
    concurrency: int = 4


def load_settings(path) -> Settings:
    parser = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    if not parser.read(path, encoding="utf-8"):
        return Settings()
    section = parser["jobq"] if parser.has_section("jobq") else {}
    defaults = Settings()
    settings = Settings(
        queue=section.get("queue", defaults.queue),
        retry_limit=int(section.get("retry_limit", defaults.retry_limit)),
        backoff_seconds=float(section.get("backoff_seconds", defaults.backoff_seconds)),
        concurrency=int(section.get("concurrency", defaults.concurrency)),
    )
    if settings.retry_limit < 0:
        raise ValueError("retry_limit must be >= 0")
    return settings
