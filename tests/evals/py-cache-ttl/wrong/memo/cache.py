import threading
import time

_MISSING = object()


def _check_ttl(ttl):
    if ttl is not None and ttl <= 0:
        raise ValueError(f"ttl must be positive, got {ttl!r}")
    return ttl


class Cache:
    """A small thread-safe in-memory key/value cache whose entries may expire."""

    def __init__(self, default_ttl=None, clock=time.monotonic):
        self._default_ttl = _check_ttl(default_ttl)
        self._clock = clock
        self._data = {}  # key -> (value, expires_at or None)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _live(self, key, now):
        """The entry for key if it is live; drops it if it has expired."""
        entry = self._data.get(key)
        if entry is None:
            return None
        if entry[1] is not None and now > entry[1]:
            del self._data[key]
            return None
        return entry

    def get(self, key, default=None):
        with self._lock:
            entry = self._live(key, self._clock())
            if entry is None:
                self.misses += 1
                return default
            self.hits += 1
            return entry[0]

    def set(self, key, value, ttl=None):
        ttl = _check_ttl(ttl)
        if ttl is None:
            ttl = self._default_ttl
        with self._lock:
            self._data[key] = (value, None if ttl is None else self._clock() + ttl)

    def delete(self, key):
        with self._lock:
            return self._live(key, self._clock()) is not None and self._data.pop(key) is not None

    def clear(self):
        with self._lock:
            self._data.clear()

    def purge(self):
        """Drops every expired entry; returns how many were dropped."""
        with self._lock:
            now = self._clock()
            expired = [k for k, (_, exp) in self._data.items() if exp is not None and now > exp]
            for k in expired:
                del self._data[k]
            return len(expired)

    def __contains__(self, key):
        with self._lock:
            return self._live(key, self._clock()) is not None

    def __len__(self):
        with self._lock:
            now = self._clock()
            return sum(1 for _, exp in self._data.values() if exp is None or now <= exp)
