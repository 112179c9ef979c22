"""Run upstream BlazingMQ's integration suite against a broker build, with pybmq as the client.

    python -m upstream_it run --client pybmq --select "legacy_mode and single" --jobs 2
    python -m upstream_it run --client bmqtool --tool PATH ...       (upstream's own client)
    python -m upstream_it compare build/it-upstream/pybmq-single.json build/it-upstream/bmqtool-single.json

The suite is not copied into the project: ``--suite`` points at a checkout of upstream's
``src/python`` and ``src/integration-tests`` (README's make targets default to the one beside
the clone). Its apparatus starts the brokers and runs ``BLAZINGMQ_TOOL`` for every client,
copying it into each broker's folder as ``bin/bmqtool.tsk``; so the runner writes small
launchers under ``--out`` (``bin/<client>/bmqtool.tsk`` runs ``pybmq tool`` or the given
bmqtool, ``bin/broker/bmqbrkr.tsk`` the given broker) and runs pytest in the suite's folder with
``-m``/``-k`` and pytest-xdist's ``-n`` (the apparatus takes ephemeral ports per worker).
Each run leaves ``<label>.xml`` (JUnit), ``<label>.json`` and ``<label>.md`` (pass/fail/skip
per test and per topology) in ``--out``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from upstream_it import results


def _launcher(path: Path, command: list[str]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(c) for c in command) + ' "$@"\n')
    path.chmod(0o755)
    return str(path)


def _existing(value: str, what: str) -> Path:
    path = Path(value).expanduser()
    if not path.exists():
        raise SystemExit(f"upstream_it: {what} {value}: no such file or folder")
    return path.resolve()


def run(args: argparse.Namespace) -> int:
    suite = _existing(args.suite, "--suite")
    tests_dir, python_dir = suite / "src" / "integration-tests", suite / "src" / "python"
    if not tests_dir.is_dir() or not python_dir.is_dir():
        raise SystemExit(f"upstream_it: --suite {suite}: no src/integration-tests and src/python")
    broker = _existing(args.broker, "--broker")
    out = Path(args.out).resolve()
    bin_dir = out / "bin"
    if args.client == "pybmq":
        tool_command = [sys.executable, "-m", "pybmq.cli", "tool"]
    else:
        if not args.tool:
            raise SystemExit(
                "upstream_it: --client bmqtool needs --tool PATH (bmqtool or its launcher)"
            )
        tool_command = [str(_existing(args.tool, "--tool"))]
    plugins = out / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    label = args.label or f"{args.client}"
    junit = out / f"{label}.xml"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(python_dir), os.environ.get("PYTHONPATH")])
        ),
        "PYTHONDONTWRITEBYTECODE": "1",  # the suite's folder may be read-only
        "BLAZINGMQ_BROKER": _launcher(bin_dir / "broker" / "bmqbrkr.tsk", [str(broker)]),
        "BLAZINGMQ_TOOL": _launcher(bin_dir / args.client / "bmqtool.tsk", tool_command),
        "BLAZINGMQ_PLUGINS": str(plugins),
    }
    command = [
        sys.executable, "-m", "pytest",
        "-p", "no:pybmq", "-p", "no:asyncio",  # this project's plugins stay out of upstream's run
        "-m", args.select,
        f"--timeout={args.test_timeout}",
        f"--junitxml={junit}",
        "-q", "-rfE", "-o", "log_cli=false",
    ]  # fmt: skip
    if args.keyword:
        command += ["-k", args.keyword]
    if args.jobs > 1:
        command += ["-n", str(args.jobs)]
    command += args.pytest_args
    print(f"upstream_it: {label}: {' '.join(shlex.quote(c) for c in command)}", flush=True)
    began = time.monotonic()
    with open(out / f"{label}.log", "w") as log:
        status = subprocess.call(
            command, cwd=tests_dir, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    wall = time.monotonic() - began
    if not junit.exists():
        print((out / f"{label}.log").read_text()[-4000:], file=sys.stderr)
        raise SystemExit(f"upstream_it: pytest wrote no results (exit {status})")
    found = results.read_junit(junit)
    selection = f"-m {shlex.quote(args.select)}" + (
        f" -k {shlex.quote(args.keyword)}" if args.keyword else ""
    )
    json_path, md_path = results.save(found, label, wall, out, selection)
    print("\n".join(results.count_table({label: found})))
    print(
        f"upstream_it: {len(found)} tests in {wall:.0f} s; {md_path}, {json_path}, "
        f"log {out / (label + '.log')}"
    )
    counted = results.counts(found).get("all")
    passed = counted["passed"] if counted else 0
    failed = counted["failed"] if counted else 0
    skipped = counted["skipped"] if counted else 0
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if status not in (0, 1):  # usage error, interrupted, internal error, no tests collected
        return status
    return 0 if args.report_only or status == 0 else 1


def compare(args: argparse.Namespace) -> int:
    text = results.side_by_side(Path(args.ours), Path(args.theirs))
    if args.page:
        results.update_page(Path(args.page), args.block, text)
    print(text, end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m upstream_it", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("run", help="run a selection of the suite with one client")
    runner.add_argument("--suite", required=True, help="upstream's integration-tests checkout")
    runner.add_argument("--broker", required=True, help="bmqbrkr.tsk, or its launcher")
    runner.add_argument("--client", choices=("pybmq", "bmqtool"), default="pybmq")
    runner.add_argument("--tool", help="with --client bmqtool: bmqtool.tsk or its launcher")
    runner.add_argument("--select", default="legacy_mode and single", help="pytest -m expression")
    runner.add_argument("--keyword", default="", help="pytest -k expression")
    runner.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers (default 2)")
    runner.add_argument("--test-timeout", type=int, default=600, help="seconds per test")
    runner.add_argument("--label", help="name of the result files (default: the client)")
    runner.add_argument(
        "--out", default="build/it-upstream", help="folder for launchers and results"
    )
    runner.add_argument(
        "--report-only",
        action="store_true",
        help="exit 0 when the suite ran, whatever its outcome (for reports)",
    )
    runner.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    runner.set_defaults(func=run)
    both = commands.add_parser("compare", help="two runs' results side by side (Markdown)")
    both.add_argument("ours", help="the pybmq run's JSON")
    both.add_argument("theirs", help="the baseline run's JSON")
    both.add_argument("--page", help="also write it into this Markdown page's block")
    both.add_argument("--block", default="it-upstream", help="the block's name in --page")
    both.set_defaults(func=compare)
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
