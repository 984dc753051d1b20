"""A bounded, thread-safe LRU of query vectors, one per Engine (never shared across sessions)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

DEFAULT_SIZE = 256


class QueryVectorCache:
    """Text -> vector, keeping the `maxsize` most recently used (read-only arrays)."""

    def __init__(self, maxsize: int = DEFAULT_SIZE) -> None:
        if maxsize <= 0:
            raise ValueError(f"maxsize must be > 0, but got {maxsize}")
        self.maxsize = maxsize
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, compute: Callable[[str], np.ndarray]) -> np.ndarray:
        with self._lock:
            vector = self._items.get(text)
            if vector is not None:
                self._items.move_to_end(text)
                return vector
        vector = np.asarray(compute(text))
        vector.setflags(write=False)  # a caller cannot change what another call gets
        with self._lock:
            self._items[text] = vector
            self._items.move_to_end(text)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, text: object) -> bool:
        return text in self._items
