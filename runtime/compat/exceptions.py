"""The two exception types of the official SDK, under the same names (``blazingmq.exceptions``)."""

from __future__ import annotations

from pybmq.errors import PybmqError


class Error(PybmqError):
    """Anything the session refused or the broker rejected (the official SDK's catch-all).

    Also a :class:`pybmq.errors.PybmqError`, so pybmq-aware code can catch both families at once."""


class BrokerTimeoutError(Error):
    """The broker did not answer within the operation's timeout."""


__all__ = ["BrokerTimeoutError", "Error"]
