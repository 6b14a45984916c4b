import heapq


class Schedule:
    """Orders job runs by due time (seconds since start)."""

    def __init__(self, jobs):
        self._heap = [(job.interval, i, job) for i, job in enumerate(jobs)]
        heapq.heapify(self._heap)

    def next_due(self, until: float):
        """Yields (time, job) for every run due up to `until`, rescheduling each job."""
        while self._heap and self._heap[0][0] <= until:
            due, i, job = heapq.heappop(self._heap)
            yield due, job
            heapq.heappush(self._heap, (due + job.interval, i, job))
