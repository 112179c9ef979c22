"""Host health monitors for a session (``bmqpi::HostHealthMonitor`` in the C++ SDK,
``HostHealthMonitor`` in the Java SDK): what tells a session whether its machine is healthy.

``HostHealthMonitor`` is the interface: ``healthy`` and ``subscribe(listener)``; a monitor that
watches something (a file, a health endpoint) subclasses it and calls ``_set(healthy)``.
``ManualHostHealthMonitor`` is flipped by hand (``set_healthy``/``set_unhealthy``), like the
C++ SDK's ``SimpleHostHealthMonitor``. One monitor may serve many sessions; listeners are called
on the thread that changed the verdict, and a bound method is held weakly (a session that is
gone does not stay alive through its monitor).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

__all__ = ["HealthListener", "HostHealthMonitor", "ManualHostHealthMonitor"]

HealthListener = Callable[[bool], object]


class HostHealthMonitor:
    """Whether the host is healthy, and who to tell when that changes. Starts healthy."""

    def __init__(self) -> None:
        self._healthy = True
        self._lock = threading.Lock()
        self._listeners: dict[int, Callable[[], HealthListener | None]] = {}
        self._next_id = 0

    @property
    def healthy(self) -> bool:
        return self._healthy

    def subscribe(self, listener: HealthListener) -> Callable[[], None]:
        """Call ``listener(healthy)`` on every change; returns the function that unsubscribes."""
        ref: Callable[[], HealthListener | None]
        if hasattr(listener, "__self__") and hasattr(listener, "__func__"):
            ref = weakref.WeakMethod(listener)  # type: ignore[arg-type]
        else:

            def ref() -> HealthListener:
                return listener

        with self._lock:
            key = self._next_id
            self._next_id += 1
            self._listeners[key] = ref

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(key, None)

        return unsubscribe

    def _set(self, healthy: bool) -> None:
        """Record the verdict; listeners hear of a change (not of a repeat)."""
        with self._lock:
            changed = healthy != self._healthy
            self._healthy = healthy
            refs = list(self._listeners.items())
        if not changed:
            return
        for key, ref in refs:
            listener = ref()
            if listener is None:
                with self._lock:
                    self._listeners.pop(key, None)
            else:
                listener(healthy)


class ManualHostHealthMonitor(HostHealthMonitor):
    """A monitor the application (or a test) sets by hand."""

    def set_healthy(self) -> None:
        self._set(True)

    def set_unhealthy(self) -> None:
        self._set(False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(healthy={self.healthy})"
