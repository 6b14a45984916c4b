import re
from datetime import datetime, timezone


def slugify(title):
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:48] or "untitled"


def now_iso():
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
