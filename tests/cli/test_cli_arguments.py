"""No traceback from any argument: every flag of every subcommand, walked from the argparse
spec, refuses invalid values with exit status 2 and the flag named, before anything connects
or listens; and a bounded fuzz over whole argument lists never raises.

Runs ``main()`` in-process with ``asyncio.run`` replaced by a sentinel, so "reached the
network" is an assertion failure rather than a connection attempt."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.cli import validate
from pybmq.cli.main import build_parsers, main

pytestmark = [
    pytest.mark.timeout(300),
    # the sentinel closes the coroutine handed to asyncio.run, not the ones it would await
    pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning"),
]

QUEUE = "bmq://bmq.test.mem.priority/args"
NON_UTF8 = b"\xff\xfe".decode("utf-8", "surrogateescape")


class ReachedTheNetwork(Exception):
    """asyncio.run was called: the arguments got past every check."""


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(coro: Any, **_: Any) -> None:
        coro.close()
        raise ReachedTheNetwork

    monkeypatch.setattr(asyncio, "run", refuse)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("args")
    (root / "a.file").write_text("user:password\n")
    (root / "capture.tap").write_bytes(b"")
    return {
        "dir": str(root),
        "file": str(root / "a.file"),
        "missing": str(root / "missing" / "x"),
        "out": str(root / "capture.tap"),
    }


def base_args(name: str, files: dict[str, str]) -> list[str]:
    """Valid required arguments of each subcommand (the walked flag is added after them)."""
    return {
        "post": [QUEUE],
        "consume": [QUEUE],
        "tap": ["--broker", "tcp://127.0.0.1:1", "--out", files["out"]],
        "admin": ["HELP"],
        "decode": [files["file"]],
        "schema-diff": [files["file"], files["file"]],
        "generate": ["--xsd", files["file"], "--out", files["dir"] + "/gen"],
    }.get(name, [])


# Flags whose value is free text by design, or checked by the command itself (named there):
# the walk still tries them, expecting exit 2 or a clean run, never a traceback.
FREE = {"--package", "--baseline-dir", "--xsd", "--window", "--count", "--size"}


def invalid_values(action: argparse.Action, files: dict[str, str]) -> list[str]:
    """Values the flag must refuse, by the check its spec names."""
    common = ["", NON_UTF8]
    if action.choices:
        return ["no-such-choice", *common]
    by_check = {
        "readable_file": [files["missing"], files["dir"]],
        "input_file": [files["missing"], files["dir"]],
        "auth_spec": [f"BASIC:{files['missing']}", ":x"],
        "writable_file": [files["dir"], files["missing"]],
        "output_dir": [files["file"], files["missing"]],
        "existing_dir": [files["file"], files["missing"]],
        "host_port": ["nohost", ":70000", ":-1"],
        "broker_url": ["http://x", "tcp://h:99999"],
        "text": [],
    }
    name = getattr(action.type, "__name__", "")
    if name in by_check:
        return [*by_check[name], *common]
    numbers = ["abc", "nan", "1e999", *common]
    if isinstance(action.type, validate.integer):
        return [str(action.type.low - 1), str(action.type.high + 1), "1.5", *numbers]
    if name == "share":
        return ["-0.1", "1.1", *numbers]
    if name == "seconds":
        return ["0", "-1", "inf", *numbers]
    return ["-1", *numbers]  # a plain int checked by the command (see FREE)


def walk() -> Iterator[tuple[str, argparse.Action]]:
    _, subparsers = build_parsers()
    for name, parser in subparsers.items():
        for action in parser._actions:
            if action.option_strings and action.nargs != 0 and action.dest != "help":
                yield name, action


def run(argv: list[str]) -> tuple[int | None, str]:
    """main(argv): (exit status, stderr); None when it reached the network."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(argv)
        except ReachedTheNetwork:
            status = None
    return status, err.getvalue()


@pytest.mark.parametrize(
    "name, action", list(walk()), ids=lambda x: x if isinstance(x, str) else x.option_strings[0]
)
def test_every_flag_refuses_invalid_values(
    name: str, action: argparse.Action, files: dict[str, str]
) -> None:
    flag = action.option_strings[-1]
    if action.type is None and not action.choices and flag not in FREE:
        pytest.fail(f"{name} {flag}: a value flag with no check (give it a validate.* type)")
    base = base_args(name, files)
    if flag in base:  # replace the valid value of a required flag
        index = base.index(flag)
        base = base[:index] + base[index + 2 :]
    for value in invalid_values(action, files):
        argv = [name, *base, flag, value]
        status, err = run(argv)
        assert "Traceback" not in err, argv
        if flag in FREE:  # checked by the command, maybe after another argument's check
            assert status in (0, 1, 2, None), (argv, status, err)
            continue
        assert status == 2, (argv, status, err)
        assert any(option in err for option in action.option_strings) or action.dest in err, (
            argv,
            err,
        )


def test_positionals_refuse_invalid_values(files: dict[str, str]) -> None:
    for argv in (
        ["post", ""],
        ["post", NON_UTF8],
        ["post", QUEUE, ""],
        ["consume", ""],
        ["decode", files["missing"]],
        ["decode", files["dir"]],
        ["schema-diff", files["missing"], files["missing"]],
    ):
        status, err = run(argv)
        assert status == 2 and "Traceback" not in err, (argv, err)


def _token_lists() -> st.SearchStrategy[list[str]]:
    flags = sorted({(name, flag) for name, action in walk() for flag in action.option_strings})
    values = st.one_of(
        st.sampled_from(["-1", "0", "1", "70000", "nan", "", "-", NON_UTF8, "tcp://x:1", "a:b"]),
        st.text(max_size=8),
        st.integers(-(2**70), 2**70).map(str),
        st.floats(allow_nan=True).map(str),
    )
    command = st.sampled_from(["post", "consume", "sim", "tap", "admin", "decode"])

    @st.composite
    def argv(draw: Callable[..., Any]) -> list[str]:
        name = draw(command)
        own = [flag for sub, flag in flags if sub == name]
        tokens = [name]
        for _ in range(draw(st.integers(0, 6))):
            tokens.append(draw(st.one_of(st.sampled_from(own), values)))
        return tokens

    return argv()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=_token_lists())
def test_fuzzed_argument_lists_never_raise(argv: list[str]) -> None:
    if argv[0] == "decode" and len(argv) > 1 and argv[1] == "-":
        argv = argv[:1]  # would read the test's own stdin
    status, err = run(argv)
    assert "Traceback" not in err
    assert status is None or isinstance(status, int)


def test_argument_errors_as_a_subprocess(tmp_path: Path) -> None:
    """The probes of the issue, as an operator types them: exit 2, flag named, no traceback."""
    cases = [
        (["sim", "--auth", f"BASIC:{tmp_path / 'none'}"], "--auth"),
        (["sim", "--port", "70000"], "--port"),
        (["tap", "--listen", "127.0.0.1:-1", "--broker", "tcp://h:1", "--out", "x"], "--listen"),
        (["post", QUEUE, "--auth", "BASIC", "--auth-file", str(tmp_path / "none")], "--auth-file"),
        (["post", QUEUE, "--tls-ca", str(tmp_path / "none")], "--tls-ca"),
        (["post", QUEUE, "--compress-above", "-1"], "--compress-above"),
        (["consume", QUEUE, "--max-unconfirmed", "0"], "--max-unconfirmed"),
    ]
    for argv, flag in cases:
        result = subprocess.run(
            [sys.executable, "-m", "pybmq.cli", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 2, (argv, result.stderr)
        assert flag in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_busy_port_is_a_usage_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for argv, flag in (
            (["sim", "--port", str(port)], "--port"),
            (
                [
                    "tap",
                    "--listen",
                    f"127.0.0.1:{port}",
                    "--broker",
                    "tcp://h:1",
                    "--out",
                    str(tmp_path / "t"),
                ],
                "--listen",
            ),
        ):
            result = subprocess.run(
                [sys.executable, "-m", "pybmq.cli", *argv],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert result.returncode == 2, result.stderr
            assert flag in result.stderr and "Traceback" not in result.stderr, result.stderr
