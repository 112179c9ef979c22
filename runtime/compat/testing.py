"""``blazingmq.testing``'s one name: ``HostHealth``, the old name of ``BasicHealthMonitor``.

For a broker to test against, pybmq has ``pybmq sim`` and the ``bmq_broker_url`` pytest fixture.
"""

from __future__ import annotations

from pybmq.compat.values import BasicHealthMonitor

HostHealth = BasicHealthMonitor

__all__ = ["HostHealth"]
