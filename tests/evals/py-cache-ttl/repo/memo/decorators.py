import functools

_MISSING = object()


def cached(cache, key=None):
    """Memoizes a function in `cache`. `key(*args, **kwargs)` builds the cache key; by default
    it is the function's qualified name with its arguments."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            k = key(*args, **kwargs) if key else (fn.__qualname__, args, tuple(sorted(kwargs.items())))
            value = cache.get(k, _MISSING)
            if value is _MISSING:
                value = fn(*args, **kwargs)
                cache.set(k, value)
            return value

        return wrapper

    return decorate
