"""Machine instructions per message of the wire hot paths, counted by ``valgrind --tool=callgrind``.

Unlike CPU time on a shared machine, the count does not depend on the load, so a before/after
comparison is reproducible. Each workload runs twice in a fresh interpreter under callgrind, once
with 2 and once with 12 events of 1000 messages; the difference divided by 10,000 messages is the
cost per message, with start-up and import cost cancelled out.

``python -m bench.instructions [name filter]`` (needs valgrind on PATH; takes about a minute).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.opcount import N, workload

_TOTAL = re.compile(r"^summary:\s+(\d+)", re.M)


def _child(name: str, rounds: int) -> None:
    fn = workload()[name]
    for _ in range(rounds):
        fn()


def _instructions(name: str, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             "-m", "bench.instructions", "--child", name, str(rounds)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
        found = _TOTAL.search(out.read_text())
        if found is None:
            raise RuntimeError("callgrind wrote no summary line")
        return int(found.group(1))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]))
        return
    wanted = sys.argv[1] if len(sys.argv) > 1 else ""
    for name in workload():
        if wanted not in name:
            continue
        per_message = (_instructions(name, 12) - _instructions(name, 2)) / (10 * N)
        print(f"{name:<24} {per_message:8.0f} machine instructions/msg (callgrind)")


if __name__ == "__main__":
    main()
