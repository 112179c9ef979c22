"""Record the real broker's answers to the differential catalogue into broker-outcomes.json:

    BMQ_BROKER_BIN=/path/to/bmqbrkr.tsk BMQ_BROKER_TLS_BIN=/path/to/tls/bmqbrkr.tsk \
        python -m tests.differential.record [SCENARIO ...]

Each scenario runs against a fresh broker (the TLS ones against the TLS-capable build); the
file is rewritten with the scenarios named (all by default; review its diff)."""

from __future__ import annotations

import asyncio
import json
import sys

from pybmq.testing.real_broker import broker_executable

from tests.differential.scenarios import BROKERS, SCENARIOS
from tests.differential.test_differential import RECORDED, RECORDED_PATH, run_on


def main() -> int:
    names = sys.argv[1:] or sorted(SCENARIOS)
    unknown = set(names) - set(SCENARIOS)
    if unknown:
        print(f"no such scenario: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    if broker_executable() is None or (
        any(name in BROKERS for name in names) and broker_executable(tls=True) is None
    ):
        print("set BMQ_BROKER_BIN (and BMQ_BROKER_TLS_BIN) to broker executables", file=sys.stderr)
        return 2
    recorded = dict(RECORDED) if sys.argv[1:] else {}  # all: scenarios gone are dropped too
    for name in names:
        recorded[name] = asyncio.run(run_on(name, "real"))
        print(name, json.dumps(recorded[name]))
    RECORDED_PATH.write_text(
        json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
