"""Argument ranges the official SDK checks before anything reaches the broker: each case runs on
the installed official SDK and on compat (against the same simulator where it needs a session),
and both must raise the same exception type, or both accept."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from tests.helpers.paths import REPO_ROOT

pytestmark = pytest.mark.timeout(180)
TIMEOUT = 120
QUEUE = "bmq://bmq.test.mem.priority/compat-validation"
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)

Case = Callable[[ModuleType, Any], object]


def _open(**options: Any) -> Case:
    def case(sdk: ModuleType, session: Any) -> object:
        uri = f"{QUEUE}-{abs(hash(repr(options))) % 10**8}"
        try:
            return session.open_queue(uri, read=True, options=sdk.QueueOptions(**options))
        finally:
            with contextlib.suppress(sdk.Error):  # not opened: nothing to close
                session.close_queue(uri)

    return case


def _configure(**options: Any) -> Case:
    def case(sdk: ModuleType, session: Any) -> object:
        return session.configure_queue(QUEUE, sdk.QueueOptions(**options))

    return case


def _post(size: int, properties: dict[str, Any] | None = None) -> Case:
    def case(sdk: ModuleType, session: Any) -> object:
        uri = f"{QUEUE}-post"
        session.open_queue(uri, write=True)
        try:
            return session.post(uri, b"x" * size, properties=properties)
        finally:
            session.close_queue(uri)

    return case


MAX_PAYLOAD = 64 * 1024 * 1024  # PutHeader::k_MAX_PAYLOAD_SIZE_SOFT

CASES: dict[str, Case] = {
    "priority above int32": _open(consumer_priority=INT_MAX + 1),
    "priority at int32 max": _open(consumer_priority=INT_MAX),
    "priority at int32 min": _open(consumer_priority=INT_MIN),
    "priority below int32": _open(consumer_priority=INT_MIN - 1),
    "priority not int": _open(consumer_priority="1"),
    "max messages negative": _open(max_unconfirmed_messages=-1),
    "max messages above int32": _open(max_unconfirmed_messages=INT_MAX + 1),
    "max messages zero": _open(max_unconfirmed_messages=0),
    "max bytes negative": _open(max_unconfirmed_bytes=-1),
    "max bytes above int32": _open(max_unconfirmed_bytes=INT_MAX + 1),
    "max bytes float": _open(max_unconfirmed_bytes=1.5),
    "configure priority above int32": _configure(consumer_priority=INT_MAX + 1),
    "priority above the core's max": _open(consumer_priority=INT_MAX // 2 + 1),
    "priority at the core's max": _open(consumer_priority=INT_MAX // 2),
    "priority below the core's min": _open(consumer_priority=INT_MIN // 2 - 1),
    "priority at the core's min": _open(consumer_priority=INT_MIN // 2),
    "configure priority above the core's max": _configure(consumer_priority=INT_MAX // 2 + 1),
    "configure max messages negative": _configure(max_unconfirmed_messages=-1),
    "open timeout negative": lambda sdk, s: s.open_queue(QUEUE + "-t", write=True, timeout=-1.0),
    "open timeout zero": lambda sdk, s: s.open_queue(QUEUE + "-t0", write=True, timeout=0.0),
    "open timeout huge": lambda sdk, s: s.open_queue(QUEUE + "-th", write=True, timeout=2.0**63),
    "configure timeout negative": lambda sdk, s: s.configure_queue(
        QUEUE, sdk.QueueOptions(), timeout=-1.0
    ),
    "close timeout negative": lambda sdk, s: s.close_queue(QUEUE, timeout=-1.0),
    "timeouts negative": lambda sdk, s: sdk.Timeouts(connect_timeout=-1.0),
    "timeouts zero": lambda sdk, s: sdk.Timeouts(open_queue_timeout=0.0),
    "timeouts huge": lambda sdk, s: sdk.Timeouts(open_queue_timeout=2.0**63),
    "post empty": _post(0),
    "post at the payload limit": _post(MAX_PAYLOAD),
    "post over the payload limit": _post(MAX_PAYLOAD + 1),
    "post at the limit with properties": _post(MAX_PAYLOAD - 8, {"k": "v" * 64}),
}

SESSION_CASES: dict[str, dict[str, Any]] = {
    "num_processing_threads zero": {"num_processing_threads": 0},
    "num_processing_threads negative": {"num_processing_threads": -1},
    "num_processing_threads above int32": {"num_processing_threads": INT_MAX + 1},
    "blob_buffer_size zero": {"blob_buffer_size": 0},
    "channel_high_watermark negative": {"channel_high_watermark": -5},
    "event_queue_watermarks reversed": {"event_queue_watermarks": (10, 5)},
    "event_queue_watermarks negative": {"event_queue_watermarks": (-1, 5)},
    "stats_dump_interval negative": {"stats_dump_interval": -1.0},
    "timeout negative": {"timeout": -1.0},
    "timeout zero": {"timeout": 0.0},
}


def _outcome(run: Callable[[], object]) -> str:
    try:
        run()
    except Exception as exc:  # the type is what is compared
        return type(exc).__name__
    return "ok"


def run_call_cases(sdk: ModuleType, url: str) -> dict[str, str]:
    """Every call case on one session of ``sdk`` (in a child process: see ``_child``)."""
    session = sdk.Session(lambda e: None, lambda m, h: None, broker=url)
    try:
        session.open_queue(QUEUE, read=True)
        return {name: _outcome(lambda c=case: c(sdk, session)) for name, case in CASES.items()}
    finally:
        session.stop()


def run_session_case(sdk: ModuleType, url: str, name: str) -> dict[str, str]:
    def start() -> None:
        sdk.Session(lambda e: None, broker=url, **SESSION_CASES[name]).stop()

    return {name: _outcome(start)}


CHILD = """
import importlib, json, sys
from tests.compat import test_validation as t
sdk = importlib.import_module(sys.argv[1])
args = sys.argv[2:]
out = t.run_session_case(sdk, *args) if len(args) == 2 else t.run_call_cases(sdk, *args)
print(json.dumps(out))
"""


def _child(sdk: str, *args: str) -> dict[str, str]:
    """Run cases in a child process: the official SDK's C++ core aborts the process on some
    arguments, which then counts as the outcome "abort"."""
    env = {k: v for k, v in os.environ.items() if k != "BMQ_BROKER_URI"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, sdk, *args],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=REPO_ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        return {"*": f"abort ({done.returncode})"}
    result: dict[str, str] = json.loads(done.stdout.splitlines()[-1])
    return result


def _official_installed() -> bool:
    return importlib.util.find_spec("blazingmq") is not None


@pytest.mark.skipif(not _official_installed(), reason="the official blazingmq is not installed")
def test_call_validation_matches_the_official_sdk(bmq_broker_url: str) -> None:
    official = _child("blazingmq", bmq_broker_url)
    compat = _child("pybmq.compat", bmq_broker_url)
    differences = {
        n: (official.get(n), compat.get(n)) for n in CASES if official.get(n) != compat.get(n)
    }
    assert not differences, differences
    assert any(v != "ok" for v in official.values())  # the table does exercise the checks


@pytest.mark.skipif(not _official_installed(), reason="the official blazingmq is not installed")
@pytest.mark.parametrize("name", sorted(SESSION_CASES))
def test_session_validation_matches_the_official_sdk(name: str, bmq_broker_url: str) -> None:
    official = _child("blazingmq", bmq_broker_url, name)
    compat = _child("pybmq.compat", bmq_broker_url, name)
    if official.get("*", "").startswith("abort"):
        # The official SDK's C++ core aborts the process: compat raises ValueError instead.
        assert compat == {name: "ValueError"}
    else:
        assert compat == official
