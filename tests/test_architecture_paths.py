"""docs/architecture.md's paths through the client engine are what the engine calls.

Each bullet of the page's path list holds chains of calls (backticked names joined by arrows);
the engine is run on bytes through each path with a profiler on, and every chain must appear in
the calls it made, in its order (other calls may come between). So the page cannot drift from
the code: rename a method, move a step to another part, and this fails.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest
from pybmq.client.engine import ClientEngine
from pybmq.wire.guid import MessageGuidGenerator
from pybmq.wire.push import PushEventBuilder

from tests.helpers.engine import control, reply_bytes, sent_events, serve_control, started_engine
from tests.helpers.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "architecture.md"
QUEUE = "bmq://bmq.test.mem.priority/paths"
CHAIN = re.compile(r"`([\w.]+)`(?:\s*→\s*`[\w.]+`)+")


def documented_paths() -> dict[str, list[list[str]]]:
    """Bullet title ('A post', ...) -> its chains of names, from the page."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("The paths through it", 1)[1].split("\n\n", 2)[1]
    paths: dict[str, list[list[str]]] = {}
    for bullet in re.split(r"\n- ", "\n" + section.strip()):
        if not bullet.strip():
            continue
        title, _, body = bullet.partition(":")
        chains = [re.findall(r"`([\w.]+)`", match.group(0)) for match in CHAIN.finditer(body)]
        paths[title.strip("- ").strip()] = chains
    return paths


def calls_of(run: Callable[[], Any]) -> list[tuple[str, str]]:
    """(qualified name, name) of every Python call ``run`` makes; a method's qualified name is
    its object's class and its name (an inherited method counts as its subclass's)."""
    seen: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            code = frame.f_code
            qualname = code.co_name  # a function's name (co_qualname is 3.11's)
            owner = frame.f_locals.get("self") if code.co_argcount else None
            if owner is not None:  # a method: its object's class and its name
                qualname = f"{type(owner).__name__}.{code.co_name}"
            seen.append((qualname, code.co_name))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen


def in_order(chain: list[str], calls: list[tuple[str, str]]) -> bool:
    position = 0
    for name in chain:
        key = 0 if "." in name else 1
        while position < len(calls) and calls[position][key] != name:
            position += 1
        if position == len(calls):
            return False
        position += 1
    return True


def opened(read: bool) -> tuple[ClientEngine, int]:
    engine, _ = started_engine()
    _, queue_id = engine.open_queue(QUEUE, 0.0, read=read, write=not read)
    serve_control(engine)
    engine.next_events()
    return engine, queue_id


def run_post() -> Callable[[], Any]:
    engine, queue_id = opened(read=False)

    def run() -> None:
        engine.post(queue_id, b"payload", 0.0, properties={"n": 1})
        engine.data_to_send()

    return run


def run_push_confirm() -> Callable[[], Any]:
    engine, queue_id = opened(read=True)
    builder = PushEventBuilder()
    builder.add(engine.queues[queue_id].qid, MessageGuidGenerator().generate(), b"payload")
    [event] = builder.finish()

    def run() -> None:
        engine.receive_data(event, 0.0)
        [received] = engine.next_events()
        engine.confirm(queue_id, received.message.guid)  # type: ignore[union-attr]
        engine.data_to_send()

    return run


def run_control_answer() -> Callable[[], Any]:
    engine, _ = started_engine()
    engine.open_queue(QUEUE, 0.0, write=True)
    [request] = [control(e) for e in sent_events(engine)]
    assert request.selection == "open_queue"
    answer = reply_bytes(request)

    def run() -> None:
        engine.receive_data(answer, 0.0)

    return run


SCENARIOS: dict[str, Callable[[], Callable[[], Any]]] = {
    "A post": run_post,
    "A PUSH to its CONFIRM": run_push_confirm,
    "An answer to a control request": run_control_answer,
}


def test_the_page_lists_the_paths_this_test_runs() -> None:
    paths = documented_paths()
    assert set(paths) == set(SCENARIOS)
    assert all(paths[title] for title in paths), "every path has a chain of calls"


@pytest.mark.parametrize("title", sorted(SCENARIOS))
def test_each_documented_chain_is_what_the_engine_calls(title: str) -> None:
    calls = calls_of(SCENARIOS[title]())
    for chain in documented_paths()[title]:
        assert in_order(chain, calls), f"{title}: {' → '.join(chain)} is not what runs"


def test_a_chain_the_engine_does_not_follow_fails() -> None:
    """The check can fail: a chain out of order, or naming a call that does not happen."""
    calls = calls_of(run_post())
    assert in_order(["ClientEngine.post", "Publisher.post"], calls)
    assert not in_order(["Publisher.post", "ClientEngine.post", "Publisher.post"], calls)
    assert not in_order(["ClientEngine.post", "Connection.on_control"], calls)
