"""The two addresses every layer reads: a queue URI and a broker URL. Parsed here, once.

Queue URIs follow the grammar of the official SDKs' URI parser (``bmqt::UriParser``,
``com.bloomberg.bmq.Uri``): ``bmq://domain[~tier]/queue[?id=appId]`` with letters, digits and
``-_.`` in each part (``~`` also in a queue name). A broker URL is ``tcp://host[:port]``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pybmq.errors import UsageError

__all__ = [
    "BROKER_URI_ENV",
    "DEFAULT_BROKER",
    "DEFAULT_PORT",
    "QUEUE_NAME_MAX_LENGTH",
    "QueueUri",
    "default_broker",
    "parse_broker_url",
    "parse_queue_uri",
    "require_queue_uri",
]

DEFAULT_BROKER = "tcp://localhost:30114"
DEFAULT_PORT = 30114
# As in the official SDKs: when set, this environment variable replaces the default broker.
BROKER_URI_ENV = "BMQ_BROKER_URI"


def default_broker() -> str:
    """The broker a session uses when none is given: ``$BMQ_BROKER_URI``, else localhost:30114."""
    return os.environ.get(BROKER_URI_ENV) or DEFAULT_BROKER


# The longest queue name (the part after the domain) upstream accepts (bmqt::Uri, since 0.94.7:
# QUEUE_NAME_TOO_LONG); the client refuses longer ones locally and the simulator refuses them.
QUEUE_NAME_MAX_LENGTH = 64

_QUEUE_URI = re.compile(
    r"bmq://(?P<domain>[-A-Za-z0-9_.]+?)(?:~(?P<tier>[-A-Za-z0-9_.]*))?/"
    r"(?P<queue>[-A-Za-z0-9_.~]+)(?:\?id=(?P<app>[-A-Za-z0-9_.~]+))?"
)


@dataclass(frozen=True, slots=True)
class QueueUri:
    """A parsed ``bmq://domain[~tier]/queue[?id=appId]``."""

    text: str
    domain: str
    queue: str
    app_id: str | None
    tier: str | None = None

    @property
    def canonical(self) -> str:
        """The queue's identity: domain and name, without tier or appId."""
        return f"bmq://{self.domain}/{self.queue}"

    @property
    def base(self) -> str:
        """The URI without its ``?id=`` (tier kept): what one wire queue id stands for."""
        return self.text.split("?", 1)[0]


def parse_queue_uri(text: str) -> QueueUri | None:
    """The parts of a queue URI, or None when ``text`` is not one (a peer's bytes: the caller
    answers in the protocol's terms)."""
    match = _QUEUE_URI.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    return QueueUri(text, match["domain"], match["queue"], match["app"], match["tier"])


def require_queue_uri(text: str) -> QueueUri:
    """The parts of a queue URI given by a user, or a UsageError that shows the expected form."""
    uri = parse_queue_uri(text)
    if uri is None:
        raise UsageError(f"queue URI must look like bmq://domain/queue[?id=appId], got {text!r}")
    return uri


def parse_broker_url(url: str, default_port: int | None = DEFAULT_PORT) -> tuple[str, int]:
    """``tcp://host[:port]`` → (host, port); a clear UsageError for anything else (and for a
    URL without a port when ``default_port`` is None)."""
    parts = urlsplit(url)
    if parts.scheme != "tcp" or not parts.hostname:
        raise UsageError(f"broker URL must look like tcp://host:port, got {url!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"bad port in broker URL {url!r}: {exc}") from None
    port = port or default_port
    if port is None:
        raise UsageError(f"broker URL must look like tcp://host:port, got {url!r}")
    return parts.hostname, port
