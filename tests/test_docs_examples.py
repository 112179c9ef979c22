"""Every Python code block of the README and of the documentation site runs, against a simulator.

The blocks of one page run in order in one namespace (a later block may use what an earlier one
defined), as a reader would paste them, in a scratch directory. ``tcp://localhost:30114`` (where
``pybmq sim`` listens by default; ``("localhost", 30114)`` for a raw socket) and
``tcp://broker:30114`` are replaced by the URL of a simulator started for the page, and the names
the guide uses without defining them are given: ``broker`` (that URL) and ``uri`` (a queue). The
security page gets a simulator with TLS (a CA made for the test, written as ``ca.pem``) that wants
the BASIC credential its example sends; a page that reads a file gets a copy of it; the Spark
page's relative output paths (``"out/..."``) are put under the scratch directory. A block may use
``await`` at top level (it then runs in ``asyncio.run``); a ``test_*`` function a block defines is
called as pytest would call it: with the simulator's URL when it takes an argument (the plugin's
fixture), or, when its parameter is named ``bmq_cluster``, with a cluster of real brokers (the page
is skipped without ``BMQ_BROKER_BIN``); on an event loop when it is a coroutine function. A block that cannot run here says why
in an HTML comment on the line before its fence: ``<!-- not run: REASON -->``; the test fails on
a page whose blocks are all skipped this way, so that the mechanism stays the exception. The
README's quick-start shell commands run too.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pybmq.sim.auth import AuthConfig
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.sim.tls import server_tls_context

from tests.helpers.paths import REPO_ROOT

DEFAULT_BROKERS = ("tcp://localhost:30114", "tcp://broker:30114")
# Files a page's examples open, copied into the scratch directory.
PAGE_FILES = {"codegen.md": [REPO_ROOT / "tests/vectors/broker-config/bmqbrkrcfg.json"]}
FENCE = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    source: str
    skip_reason: str | None


def pages() -> list[Path]:
    docs = sorted((REPO_ROOT / "docs").rglob("*.md"))
    return [REPO_ROOT / "README.md", *docs]


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        line = text.count("\n", 0, match.start()) + 2
        found.append(Block(path, line, match.group(1), reason.group(1) if reason else None))
    return found


def call_test(function: Any, broker: str, scratch: Path) -> None:
    """A ``test_*`` function of a page, called as pytest would: given what its parameter names
    (the plugin's fixtures: the broker's URL, or ``bmq_cluster``), on an event loop when it is a
    coroutine function."""
    parameters = inspect.signature(function).parameters
    if "bmq_cluster" not in parameters:
        _await(function(broker) if parameters else function())
        return
    from pybmq.testing.brokers import BrokerUnavailable
    from pybmq.testing.cluster import running_cluster

    try:
        with running_cluster(folder=scratch / "cluster") as cluster:
            _await(function(cluster))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))


def _await(result: Any) -> None:
    if inspect.iscoroutine(result):
        asyncio.run(result)


def run_block(block: Block, namespace: dict[str, Any], broker: str, scratch: Path) -> None:
    # Spark resolves a relative path against the JVM's directory, not this one: made absolute.
    source = block.source.replace('"out/', f'"{scratch}/out/')
    for default in DEFAULT_BROKERS:
        source = source.replace(default, broker)
    host, port = broker.removeprefix("tcp://").rsplit(":", 1)
    source = source.replace('("localhost", 30114)', f"({host!r}, {port})")
    before = set(namespace)
    code = compile(
        source, f"{block.path.name}:{block.line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    if code.co_flags & inspect.CO_COROUTINE:
        asyncio.run(eval(code, namespace))
    else:
        exec(code, namespace)
    for name in sorted(set(namespace) - before):
        if name.startswith("test_") and callable(namespace[name]):
            call_test(namespace[name], broker, scratch)


PAGES = [p for p in pages() if blocks(p)]
# The Spark page needs pyspark and Java, like the Spark tests (deselect with -m 'not spark').
# The FastStream page needs the faststream extra (marked, and skipped without it).
MARKS = {"spark.md": [pytest.mark.spark], "faststream.md": [pytest.mark.faststream]}
PARAMS = [pytest.param(p, marks=MARKS.get(p.name, [])) for p in PAGES]


def simulator(page: Path, scratch: Path) -> ThreadedBrokerSimulator:
    if page.name != "security.md":
        return ThreadedBrokerSimulator()
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(scratch / "ca.pem"))
    server = ca.issue_cert("127.0.0.1", "localhost")
    server.cert_chain_pems[0].write_to_path(str(scratch / "cert.pem"))
    server.private_key_pem.write_to_path(str(scratch / "key.pem"))
    tls = server_tls_context(str(scratch / "cert.pem"), str(scratch / "key.pem"))
    auth = AuthConfig(basic={"alice": "secret"}, anonymous=False)
    return ThreadedBrokerSimulator(BrokerConfig(auth=auth), tls=tls)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("page", PARAMS, ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES])
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = blocks(page)
    if all(b.skip_reason for b in found):
        pytest.fail(f"{page.name}: every example is marked 'not run'")
    for source in PAGE_FILES.get(page.name, []):
        shutil.copy(source, tmp_path / source.name)
    monkeypatch.chdir(tmp_path)
    if page.name == "faststream.md":
        pytest.importorskip("faststream")
    if page.name == "spark.md":
        pytest.importorskip("pyspark")
        # What the page's text tells a reader to do: workers run the driver's interpreter.
        monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    with simulator(page, tmp_path) as sim:
        namespace: dict[str, Any] = {
            "__name__": f"docs_example_{page.stem}",
            "broker": sim.url,
            "uri": "bmq://bmq.test.mem.priority/docs-example",
        }
        for block in found:
            if block.skip_reason:
                continue
            try:
                run_block(block, namespace, sim.url, tmp_path)
            except Exception as exc:
                raise AssertionError(f"{page.name}, the block at line {block.line} failed") from exc
            finally:
                stop_streams(namespace)


def stop_streams(namespace: dict[str, Any]) -> None:
    """The Spark page starts streaming queries; they must not outlive it (the SparkSession is
    shared with the Spark tests, so it stays)."""
    spark = namespace.get("spark")
    if spark is not None and hasattr(spark, "streams"):
        for query in spark.streams.active:
            query.stop()


def test_every_page_with_code_is_checked() -> None:
    """A Python block is found on the pages a reader starts from (the harness is not blind)."""
    names = {p.name for p in PAGES}
    assert {"README.md", "client.md", "compat.md"} <= names


def test_the_readme_quick_start_commands_run(bmq_broker_url: str) -> None:
    """The shell half of the README's quick start: its ``pybmq post`` and ``pybmq consume`` lines,
    pointed at a simulator (the first line starts one; here the fixture does)."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Quick start")
    shell = re.search(r"^```sh\n(.*?)^```$", text[start:], re.M | re.S)
    assert shell is not None
    commands = [line.split("#", 1)[0].split() for line in shell.group(1).splitlines()]
    commands = [c for c in commands if c[:2] in (["pybmq", "post"], ["pybmq", "consume"])]
    assert [c[1] for c in commands] == ["post", "consume"]
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", "pybmq.cli", *command[1:], "--broker", bmq_broker_url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "done" in done.stdout
