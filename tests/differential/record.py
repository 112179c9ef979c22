"""Record the real broker's answers to the differential catalogue into broker-outcomes.json:

    BMQ_BROKER_BIN=/path/to/bmqbrkr.tsk python -m tests.differential.record

Each scenario runs against a fresh broker; the file is rewritten whole (review its diff)."""

from __future__ import annotations

import asyncio
import json
import sys

from pybmq.testing.real_broker import broker_executable

from tests.differential.scenarios import SCENARIOS
from tests.differential.test_differential import RECORDED_PATH, run_on


def main() -> int:
    executable = broker_executable()
    if executable is None:
        print("set BMQ_BROKER_BIN to a broker executable", file=sys.stderr)
        return 2
    recorded = {}
    for name in sorted(SCENARIOS):
        recorded[name] = asyncio.run(run_on(name, "real"))
        print(name, json.dumps(recorded[name]))
    RECORDED_PATH.write_text(
        json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
