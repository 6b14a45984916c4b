import itertools
from dataclasses import dataclass, field

_ids = itertools.count(1)


@dataclass
class Job:
    name: str
    payload: dict = field(default_factory=dict)
    id: int = field(default_factory=lambda: next(_ids))
    attempts: int = 0
    status: str = "pending"
    error: str = ""
