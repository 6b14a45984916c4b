import json
import os

from .utils import now_iso, slugify


class Store:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        os.makedirs(data_dir, exist_ok=True)

    def _path(self, slug):
        return os.path.join(self.data_dir, slug + ".json")

    def add(self, title, priority, status="open"):
        slug = slugify(title)
        issue = {"slug": slug, "title": title, "priority": priority, "status": status, "created": now_iso()}
        with open(self._path(slug), "w", encoding="utf-8") as f:
            json.dump(issue, f)
        return issue

    def all(self):
        issues = []
        for name in sorted(os.listdir(self.data_dir)):
            if name.endswith(".json"):
                with open(os.path.join(self.data_dir, name), encoding="utf-8") as f:
                    issues.append(json.load(f))
        return issues
