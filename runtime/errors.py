"""Every error pybmq raises on purpose, by whose fault it is.

Two branches, as in h11: ``ProtocolError`` means the bytes or the peer were wrong (the remote side's
fault, or corrupt data); ``UsageError`` means this side asked for something invalid. Callers can
catch ``PybmqError`` to handle both.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "AuthenticationTimeoutError",
    "BrokerError",
    "ChannelWriteTimeoutError",
    "DecodeError",
    "DeliveryError",
    "EncodeError",
    "InvalidTransitionError",
    "LingerTimeoutError",
    "MessageDecodeError",
    "PostBufferFullError",
    "ProtocolError",
    "PybmqError",
    "QueueSuspendedError",
    "RequestTimeoutError",
    "SchemaError",
    "SessionStoppedError",
    "TlsHandshakeError",
    "UsageError",
]


class PybmqError(Exception):
    """Base of all pybmq errors."""


class ProtocolError(PybmqError):
    """Malformed or unexpected data from the wire (or from a file of captured events).

    ``offset`` is the byte offset where the problem was found, when known; ``path`` names the
    field or structure being decoded (e.g. ``ControlMessage.openQueue.handleParameters.uri``).
    """

    def __init__(self, message: str, *, offset: int | None = None, path: str | None = None) -> None:
        self.reason = message
        self.offset = offset
        self.path = path
        where = []
        if path:
            where.append(f"at {path}")
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class DecodeError(ProtocolError):
    """Bytes that do not decode as the expected encoding (BER, JSON, binary layout)."""


class MessageDecodeError(ProtocolError):
    """One delivered message could not be decoded (corrupt or oversized compressed data).

    It is not raised by the session: the message is delivered with its payload unavailable and
    this error attached, so the application can log it and still confirm it (a poison message
    must not stop every consumer of its queue)."""


class UsageError(PybmqError, ValueError):
    """This side misused the API: an invalid value, argument or call order."""


class EncodeError(UsageError):
    """A value cannot be encoded (wrong type, out of range, choice without a selection)."""


class SchemaError(PybmqError):
    """A schema or layout spec given to the generator is not usable."""


class InvalidTransitionError(UsageError):
    """A session or queue was asked to do something its current state does not allow."""

    def __init__(self, machine: str, state: str, event: str) -> None:
        self.machine = machine
        self.state = state
        self.event = event
        super().__init__(f"{machine}: {event} is not allowed in state {state}")


class SessionStoppedError(PybmqError):
    """The session stopped (or its connection was lost) before the operation completed."""


class TlsHandshakeError(SessionStoppedError):
    """The TLS handshake with the broker failed, so no session could start. ``reason`` says
    why, for a program to branch on: ``"certificate"`` (the broker's certificate was refused:
    not signed by the trusted CA, issued for another host name, or expired; ``verify_code`` is
    OpenSSL's), ``"timeout"`` (no TLS answer within ``tls_handshake_timeout``: most likely a
    plain BlazingMQ port) or ``"handshake"`` (the broker ended the handshake: a TLS version or
    cipher it refuses, a client certificate it requires, or a closed connection)."""

    def __init__(self, message: str, reason: str, verify_code: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.verify_code = verify_code


class RequestTimeoutError(PybmqError, TimeoutError):
    """The broker did not answer a control request before its deadline."""


class BrokerError(PybmqError):
    """The broker answered a request with a failure status (category, code and message)."""

    def __init__(self, operation: str, category: str, code: int, message: str) -> None:
        self.operation = operation
        self.category = category
        self.code = code
        self.broker_message = message
        super().__init__(
            f"{operation} refused by the broker: {category} ({code}) {message}".rstrip()
        )


class PostBufferFullError(PybmqError):
    """No room for a post: the session already holds ``max_buffered_bytes`` for its broker (or
    ``max_buffered_posts`` while reconnecting). ``post_nowait`` raises it at once; a waiting
    post or ``drain()`` raises it when no room came within ``buffer_wait_timeout``. Nothing of
    that post was buffered."""


class DeliveryError(PybmqError):
    """Posts were NACKed or not ACKed in time: the caller must treat them as not stored."""

    def __init__(self, message: str, *, posted: int, acked: int) -> None:
        self.posted = posted
        self.acked = acked
        super().__init__(message)


class AuthenticationError(PybmqError):
    """The broker refused our credential (category, code and its message), or no credential
    could be had from the provider. Never carries the credential itself. ``retry_after``: the
    seconds the broker asked us to wait before trying again (a throttled refusal), or None."""

    def __init__(
        self, message: str, *, category: str = "", code: int = 0, retry_after: float | None = None
    ) -> None:
        self.category = category
        self.code = code
        self.retry_after = retry_after
        super().__init__(message)


class AuthenticationTimeoutError(AuthenticationError, TimeoutError):
    """The broker did not answer an AuthenticationRequest before its deadline."""


class QueueSuspendedError(PybmqError):
    """A post to a queue suspended because the host is unhealthy (``suspends_on_bad_host_health``);
    it works again once the session's host health monitor says healthy."""


class ChannelWriteTimeoutError(PybmqError, TimeoutError):
    """A post (or ``drain()``) waited longer than ``channel_write_timeout`` while the channel to
    the broker was at its high watermark (the broker is not reading what we send); nothing of
    that post was buffered."""


class LingerTimeoutError(PybmqError, TimeoutError):
    """``stop(linger=…)`` ran out before every outstanding post was acknowledged; ``pending``
    says how many were not (their outcomes are local NACKs)."""

    def __init__(self, message: str, *, pending: int) -> None:
        self.pending = pending
        super().__init__(message)
