"""Run every ``bench/bench_*.py`` module and print one table.

Each module defines ``run(quick: bool) -> list[Result]``. ``--quick`` shrinks the work so the suite
can check that benchmarks still run without paying for real measurements.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from bench import results as results_json
from bench.common import Result, print_table


def discover() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check that it runs")
    parser.add_argument("--json", type=Path, help="also write the results there, as JSON")
    parser.add_argument("only", nargs="*", help="module names (bench_x) to run; default all")
    args = parser.parse_args(argv)
    results: list[Result] = []
    by_module: dict[str, list[Result]] = {}
    for name in args.only or discover():
        module = importlib.import_module(f"bench.{name}")
        by_module[name] = module.run(args.quick)
        results.extend(by_module[name])
    across = ratios(results)
    if across:
        by_module["ratios"] = across
    print_table(results + across)
    if args.json is not None:
        results_json.write(args.json, results_json.to_json(by_module, args.quick))
    return 0


def ratios(results: list[Result]) -> list[Result]:
    """pybmq ÷ the official SDK for the end-to-end rates, when both ran (same simulator, same
    run: the ratio is the figure that survives a busy machine)."""
    by_name = {r.name: r.value for r in results}
    out = []
    for what in ("post→ACK", "consume→confirm"):
        ours, theirs = by_name.get(f"e2e pybmq {what}"), by_name.get(f"e2e official {what}")
        if ours and theirs:
            out.append(Result(f"e2e pybmq ÷ official SDK, {what}", ours / theirs, "x", "goal ≥ 2"))
    return out


if __name__ == "__main__":
    sys.exit(main())
