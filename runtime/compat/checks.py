"""The official SDK's defaults, the argument checks it makes before anything reaches the broker,
and its wording of errors; shared by every compat class."""

from __future__ import annotations

from pybmq.client.events import AckStatus as RuntimeAckStatus
from pybmq.client.options import QueueOptions as RuntimeQueueOptions
from pybmq.compat.exceptions import BrokerTimeoutError, Error
from pybmq.compat.values import (
    QUEUE_OPTION_FIELDS,
    AckStatus,
    QueueOptions,
    Timeouts,
)
from pybmq.errors import BrokerError, RequestTimeoutError, UsageError

__all__ = [
    "ACK_STATUS",
    "CONSUMER_PRIORITY_MAX",
    "CONSUMER_PRIORITY_MIN",
    "CONTROL_RESERVE",
    "DEFAULT_CHANNEL_HIGH_WATERMARK",
    "DEFAULT_EVENT_QUEUE_WATERMARKS",
    "DEFAULT_SECONDS",
    "DEFAULT_TIMEOUT",
    "INT_MAX",
    "STOPPED",
    "WRITER_ONLY_OPTIONS",
    "DefaultTimeout",
    "check_dedup",
    "check_int_option",
    "check_positive_option",
    "check_queue_options",
    "check_reader_priority",
    "failure",
    "merged",
    "seconds_or_none",
]


class DefaultTimeout(float):
    """The "use the session's timeout" marker; prints as ``...`` in signatures."""

    def __repr__(self) -> str:
        return "..."


DEFAULT_TIMEOUT = DefaultTimeout()


# The C++ SDK's defaults (bmqt::SessionOptions), in seconds.
DEFAULT_SECONDS = Timeouts(60.0, 30.0, 300.0, 300.0, 300.0)


# Messages waiting for on_message: SlowConsumerHighWaterMark at `high`, SlowConsumerNormal back at
# `low` (the official SDK's event-queue watermarks play this role; these are pybmq's defaults).
DEFAULT_EVENT_QUEUE_WATERMARKS = (50, 2000)


DEFAULT_CHANNEL_HIGH_WATERMARK = 128 * 1024 * 1024


CONTROL_RESERVE = 4 * 1024 * 1024  # kept for control messages, as upstream does


WRITER_ONLY_OPTIONS = (0, 0, -(2**31))  # what get_queue_options reports for a write-only queue


INT_MAX = 2**31 - 1


STOPPED = "Method called after session was stopped"


ACK_STATUS = {
    RuntimeAckStatus.SUCCESS: AckStatus.SUCCESS,
    RuntimeAckStatus.LIMIT_MESSAGES: AckStatus.LIMIT_MESSAGES,
    RuntimeAckStatus.LIMIT_BYTES: AckStatus.LIMIT_BYTES,
    RuntimeAckStatus.STORAGE_FAILURE: AckStatus.STORAGE_FAILURE,
    RuntimeAckStatus.NOT_READY: AckStatus.NOT_READY,
    RuntimeAckStatus.UNKNOWN: AckStatus.UNKNOWN,
    RuntimeAckStatus.TIMEOUT: AckStatus.TIMEOUT,
    RuntimeAckStatus.NOT_CONNECTED: AckStatus.NOT_CONNECTED,
    RuntimeAckStatus.CANCELED: AckStatus.CANCELED,
}


def seconds_or_none(timeout: float | None, name: str = "timeout") -> float | None:
    """The official SDK's check: None/default → None, else it must be > 0."""
    if timeout is DEFAULT_TIMEOUT or timeout is None:
        return None
    if 0.0 < timeout < 2**63:
        return float(timeout)
    raise ValueError(f"{name} must be greater than 0.0, was {timeout}")


def check_int_option(name: str, value: object) -> None:
    if value is None:
        return
    if not isinstance(value, int):
        raise TypeError(
            f"Argument {name!r} has incorrect type (expected int, got {type(value).__name__})"
        )
    if not -(2**31) <= value <= INT_MAX:
        raise OverflowError("value too large to convert to int")


# The C++ core's consumer priority range for a reader (bmqt::QueueOptions: half the int range).
CONSUMER_PRIORITY_MIN = -(2**31) // 2
CONSUMER_PRIORITY_MAX = INT_MAX // 2


def check_queue_options(options: QueueOptions) -> None:
    check_int_option("max_unconfirmed_messages", options.max_unconfirmed_messages)
    check_int_option("consumer_priority", options.consumer_priority)
    check_int_option("max_unconfirmed_bytes", options.max_unconfirmed_bytes)


def check_reader_priority(operation: str, uri: str, options: QueueOptions) -> None:
    """The C++ core refuses a reader's priority outside its range before asking the broker."""
    priority = options.consumer_priority
    if priority is not None and not CONSUMER_PRIORITY_MIN <= priority <= CONSUMER_PRIORITY_MAX:
        raise Error(
            f"Failed to {operation} {uri} queue: INVALID_ARGUMENT: consumer_priority {priority} "
            f"is outside [{CONSUMER_PRIORITY_MIN}, {CONSUMER_PRIORITY_MAX}] for a reader"
        )


def check_dedup(window: int, age: float) -> None:
    """pybmq's ``dedup_window``/``dedup_window_age`` keywords: ValueError when out of range
    (as compat does for the official options' values), TypeError when not numbers."""
    if isinstance(window, bool) or not isinstance(window, int):
        raise TypeError(f"Argument 'dedup_window' must be an int, got {type(window).__name__}")
    if isinstance(age, bool) or not isinstance(age, (int, float)):
        raise TypeError(f"Argument 'dedup_window_age' must be a number, got {type(age).__name__}")
    try:
        RuntimeQueueOptions(dedup_window=window, dedup_window_age=float(age))
    except UsageError as exc:
        raise ValueError(str(exc)) from None


def check_positive_option(name: str, value: int | None) -> None:
    """Where the official SDK's C++ core aborts the process (an assertion), raise instead."""
    if value is not None and value <= 0:
        raise ValueError(f"{name} must be positive, was {value}")


def failure(operation: str, uri: str, exc: BaseException) -> Error:
    """An error of the operation in the official SDK's words: ``Failed to <op> <uri> queue:
    <STATUS>: <detail>``; a broker timeout is a BrokerTimeoutError."""
    prefix = f"Failed to {operation} {uri} queue"
    if isinstance(exc, RequestTimeoutError):
        return BrokerTimeoutError(f"{prefix}: TIMEOUT: {exc}")
    if isinstance(exc, BrokerError):
        status = exc.category.removeprefix("E_")
        return Error(f"{prefix}: {status}: {exc.broker_message or status}")
    if isinstance(exc, UsageError):
        return Error(f"{prefix}: INVALID_ARGUMENT: {exc}")
    return Error(f"{prefix}: CANCELED: The request was canceled [reason: {exc}]")


def merged(current: QueueOptions, change: QueueOptions) -> QueueOptions:
    """``current`` with every option that ``change`` sets (not None) replaced."""
    return QueueOptions(
        *(
            getattr(change, a) if getattr(change, a) is not None else getattr(current, a)
            for a in QUEUE_OPTION_FIELDS
        )
    )
