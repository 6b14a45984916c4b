import time

from .runner import Runner


class Worker:
    """Drains a queue, running each job with retries."""

    def __init__(self, settings, registry, queue, sleep=time.sleep):
        self.runner = Runner(settings, registry, sleep=sleep)
        self.queue = queue

    def drain(self):
        finished = []
        while (job := self.queue.get()) is not None:
            finished.append(self.runner.run(job))
        return finished
