from collections import deque


class MemoryQueue:
    def __init__(self):
        self._items = deque()

    def put(self, job):
        self._items.append(job)

    def get(self):
        return self._items.popleft() if self._items else None

    def __len__(self):
        return len(self._items)
