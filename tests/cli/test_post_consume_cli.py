"""``pybmq post``/``consume`` as subprocesses against the simulator over real sockets: one
summary (text or JSON) and a documented exit code on every way a run can end."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from pybmq.sim.faults import FaultConfig
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.brokers import BROKER_KINDS, real_broker
from tests.helpers.cli import run_pybmq as pybmq
from tests.helpers.cli import signal_mid_run

pytestmark = pytest.mark.timeout(120)

QUEUE = "bmq://bmq.test.mem.priority/cli"


def summary(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert document["exit_code"] == result.returncode, result.stderr
    return document


@pytest.fixture(params=BROKER_KINDS)
def sim(request: pytest.FixtureRequest) -> Iterator[ThreadedBrokerSimulator]:
    """The simulator, or the real broker (the tests here use only its ``url``)."""
    if request.param == "real":
        with real_broker() as broker:
            yield broker  # type: ignore[misc]
        return
    with ThreadedBrokerSimulator() as simulator:
        yield simulator


def test_post_then_consume_report_counts_and_latency(sim: ThreadedBrokerSimulator) -> None:
    posted = pybmq("post", QUEUE, "--count", "500", "--json", broker=sim.url)
    assert posted.returncode == 0, posted.stderr
    document = summary(posted)
    assert document["outcome"] == "done"
    assert (document["posted"], document["acked"], document["unresolved"]) == (500, 500, 0)
    assert document["nacked"] == {}
    latency = document["latency_ms"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    assert "msg/s" not in posted.stderr  # no progress bar when stderr is not a terminal

    consumed = pybmq("consume", QUEUE, "--count", "500", "--json", broker=sim.url)
    document = summary(consumed)
    assert (document["outcome"], document["received"], document["confirmed"]) == ("done", 500, 500)


def test_text_summary_and_idle_timeout(sim: ThreadedBrokerSimulator) -> None:
    assert pybmq("post", QUEUE, "--count", "30", "--broker", sim.url).returncode == 0
    result = pybmq("consume", QUEUE, "--count", "50", "--idle-timeout", "1", "--broker", sim.url)
    assert result.returncode == 1
    assert "received 30, confirmed 30, unconfirmed 0" in result.stdout
    assert result.stdout.rstrip().endswith("incomplete")
    idle = pybmq("consume", QUEUE, "--idle-timeout", "0.5", "--json", broker=sim.url)
    assert (idle.returncode, summary(idle)["received"]) == (0, 0)


def test_nacks_are_counted_by_status() -> None:
    with ThreadedBrokerSimulator(faults=FaultConfig(nack_share=1.0)) as sim:
        result = pybmq("post", QUEUE, "--count", "20", "--json", broker=sim.url)
    document = summary(result)
    assert result.returncode == 1
    assert document["outcome"] == "nacked"
    assert document["nacked"] == {"STORAGE_FAILURE": 20}
    assert document["acked"] == 0 and document["unresolved"] == 0


def test_dropped_connection_says_what_got_through() -> None:
    faults = FaultConfig(drop_after_events=20, max_drops=1)
    with ThreadedBrokerSimulator(faults=faults) as sim:
        result = pybmq("post", QUEUE, "--count", "200000", "--json", broker=sim.url)
    document = summary(result)
    assert result.returncode == 3
    assert document["outcome"] == "failed" and document["reason"]
    assert document["posted"] > 0
    assert document["posted"] == document["acked"] + document["unresolved"]


def test_timeout_ends_the_run_with_a_summary(sim: ThreadedBrokerSimulator) -> None:
    result = pybmq("consume", QUEUE, "--timeout", "1", "--json", broker=sim.url)
    assert result.returncode == 4
    assert summary(result)["outcome"] == "timeout"


def test_unreachable_broker_is_a_failure_with_a_reason() -> None:
    result = pybmq("post", QUEUE, "--broker", "tcp://127.0.0.1:1", "--connect-timeout", "2")
    assert result.returncode == 3
    assert "cannot connect to tcp://127.0.0.1:1:" in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["post", "consume"])
def test_ctrl_c_mid_run_prints_the_summary(command: str) -> None:
    with ThreadedBrokerSimulator(faults=FaultConfig(ack_delay_ms=200)) as sim:
        done = signal_mid_run(command, QUEUE, sim.url, signal.SIGINT, settle=0.5)
    out = done.stdout
    document = json.loads(out.strip().splitlines()[-1])
    assert done.returncode == 130
    assert document["outcome"] == "interrupted"
    if command == "post":
        assert document["posted"] > 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["post", QUEUE, "--window", "0"], "--window must be >= 1"),
        (["post", QUEUE, "--properties", "a=1,a=2"], "given twice"),
        (["post", QUEUE, "--properties", "n:int8=1"], "unknown type"),
        (["post", QUEUE, "--properties", "ok:bool=maybe"], "is not a bool"),
        (["consume", QUEUE, "--count", "0"], "--count must be >= 1"),
    ],
)
def test_bad_arguments_are_refused_before_connecting(argv: list[str], message: str) -> None:
    result = pybmq(*argv, "--broker", "tcp://127.0.0.1:1")
    assert result.returncode == 2
    assert message in result.stderr


def test_every_subcommand_takes_the_logging_flags() -> None:
    from pybmq.cli.main import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    for name, sub in subparsers.choices.items():
        options = {s for a in sub._actions for s in a.option_strings}
        if sub.get_default("own_logging"):  # tool: bmqtool's -v/--verbosity; its -q is the queue
            assert {"-v", "--verbosity", "-q", "--queueuri"} <= options, name
            continue
        assert {"-v", "-q", "--log-level"} <= options, name


def test_reconnect_rides_over_a_dropped_connection() -> None:
    faults = FaultConfig(drop_after_events=20, max_drops=1)
    with ThreadedBrokerSimulator(faults=faults) as sim:
        result = pybmq("post", QUEUE, "--count", "20000", "--reconnect", "--json", broker=sim.url)
    document = summary(result)
    assert result.returncode == 0, result.stderr
    assert (document["acked"], document["unresolved"]) == (20000, 0)


def test_print_mode_keeps_idle_timeout_summary_and_exit_code(sim: ThreadedBrokerSimulator) -> None:
    posted = pybmq(
        "post", QUEUE, "--count", "3", "--size", "12", "--properties", "n:int64=3", broker=sim.url
    )
    assert posted.returncode == 0, posted.stderr
    result = pybmq(
        "consume", QUEUE, "--print", "--count", "5", "--idle-timeout", "1", broker=sim.url
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 1  # 3 of 5 before the idle timeout
    assert lines[:3] == ["pybmq-012345 {'n': 3}"] * 3
    assert "received 3, confirmed 3" in lines[3] and lines[3].endswith("incomplete")
