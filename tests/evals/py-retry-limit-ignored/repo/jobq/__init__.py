from .job import Job
from .registry import Registry
from .settings import Settings, load_settings

__all__ = ["Job", "Registry", "Settings", "load_settings"]
