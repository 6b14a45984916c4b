import argparse
import json

from .job import Job
from .queue import MemoryQueue
from .settings import load_settings
from .worker import Worker


def main(argv, registry):
    parser = argparse.ArgumentParser(prog="jobq")
    parser.add_argument("--config", default="jobq.ini")
    parser.add_argument("jobs", help="JSON file with a list of {name, payload}")
    args = parser.parse_args(argv)
    settings = load_settings(args.config)
    queue = MemoryQueue()
    with open(args.jobs, encoding="utf-8") as f:
        for spec in json.load(f):
            queue.put(Job(spec["name"], spec.get("payload", {})))
    done = Worker(settings, registry, queue).drain()
    return 0 if all(job.status == "done" for job in done) else 1
