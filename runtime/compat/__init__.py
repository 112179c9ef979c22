"""A drop-in for the official ``blazingmq`` Python SDK, on pybmq's pure-Python client.

    import pybmq.compat as blazingmq

runs code written for ``blazingmq`` 1.2.2 unchanged (and takes what its next release adds: the
session's ``authn_credential_provider``): the same names, signatures, value types,
session events, callback threading rules and exceptions (see docs/guide/compat.md for what
each option means here and the known differences). A program that does
``import blazingmq`` runs on it unedited after ``pybmq.compat.install()`` or with
``python -m pybmq.compat program.py``.
"""

from __future__ import annotations

from pybmq._version import __version__
from pybmq.compat import exceptions, session_events
from pybmq.compat.aliases import install as install
from pybmq.compat.aliases import uninstall as uninstall
from pybmq.compat.credentials import AuthnCredentialProvider as AuthnCredentialProvider
from pybmq.compat.exceptions import Error
from pybmq.compat.messages import (
    Ack,
    Message,
    MessageHandle,
    PropertyTypeDict,
    PropertyValueDict,
)
from pybmq.compat.session import Session
from pybmq.compat.values import (
    AckStatus,
    BasicHealthMonitor,
    CompressionAlgorithmType,
    PropertyType,
    QueueOptions,
    SessionOptions,
    Timeouts,
)

__all__ = [
    "Ack",
    "AckStatus",
    "BasicHealthMonitor",
    "CompressionAlgorithmType",
    "Error",
    "Message",
    "MessageHandle",
    "PropertyType",
    "PropertyTypeDict",
    "PropertyValueDict",
    "QueueOptions",
    "Session",
    "SessionOptions",
    "Timeouts",
    "__version__",
    "exceptions",
    "session_events",
]  # blazingmq 1.2.2's names only: install/uninstall are pybmq's additions, and
# AuthnCredentialProvider (importable here) is its next release's (its pull request #61)
