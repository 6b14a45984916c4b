class Registry:
    """Maps job names to handler functions."""

    def __init__(self):
        self._handlers = {}

    def handler(self, name):
        def register(fn):
            self._handlers[name] = fn
            return fn

        return register

    def get(self, name):
        try:
            return self._handlers[name]
        except KeyError:
            raise LookupError(f"no handler for job {name!r}") from None
