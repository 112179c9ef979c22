from __future__ import annotations

from bench import bench_cli_input


def test_bench_cli_input_runs_quick() -> None:
    results = bench_cli_input.run(quick=True)
    assert [r.name for r in results] == [
        "post --jsonl -, 2 MiB line",
        "post -, 2 MiB line",
        "json.loads alone (reference), 2 MiB line",
        "post --jsonl -: 2 MiB line ÷ 1 MiB line, time",
        "post -: 2 MiB line ÷ 1 MiB line, time",
    ]
    assert all(r.value > 0 for r in results)
