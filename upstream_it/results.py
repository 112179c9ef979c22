"""The results of a run of upstream's integration suite: read from pytest's JUnit XML, counted
per topology, written as JSON and Markdown, and two runs (pybmq tool and bmqtool) set side by
side."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

OUTCOMES = ("passed", "failed", "skipped")
# The topologies of upstream's fixtures (blazingmq.dev.it.fixtures), as they appear in test ids.
_TOPOLOGY = re.compile(
    r"(fsm_single_node|fsm_multi_node|single_node(?:_fsm)?|multi_node(?:_fsm)?|multi7_node(?:_fsm)?"
    r"|multi_interface(?:_fsm)?|virtual_cluster(?:_fsm)?|virtual(?:_fsm)?)"
)


@dataclass(frozen=True)
class Result:
    """One test of a run: its id, topology, outcome and, when it did not pass, the first line of
    why."""

    test: str
    topology: str
    outcome: str
    reason: str = ""
    seconds: float = 0.0


def topology_of(test: str) -> str:
    params = test.partition("[")[2]
    match = _TOPOLOGY.search(params)
    return match[1] if match else "other"


def read_junit(path: Path) -> list[Result]:
    """Every test of a JUnit XML file (pytest's ``--junitxml``), once: pytest writes a second
    test case for a test whose teardown errs after its call failed; the first failure is kept."""
    root = ET.parse(path).getroot()
    results: dict[str, Result] = {}
    for case in root.iter("testcase"):
        # "test_x" for a module's test, "test_x.TestY" for a class's: the suite's files are
        # top-level modules.
        module, *classes = (case.get("classname") or "").split(".")
        test = "::".join([f"{module}.py", *classes, case.get("name", "")])
        outcome, reason = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
            else:
                continue
            if not reason:
                text = (child.get("message") or child.text or "").strip()
                reason = text.splitlines()[0] if text else child.tag
        seconds = float(case.get("time") or 0.0)
        earlier = results.get(test)
        if earlier is not None:
            seconds += earlier.seconds
            if earlier.outcome == "failed" or outcome == "passed":
                outcome, reason = earlier.outcome, earlier.reason
        results[test] = Result(test, topology_of(test), outcome, str(reason)[:200], seconds)
    return list(results.values())


def counts(results: Iterable[Result]) -> dict[str, Counter[str]]:
    """outcome counts per topology, plus ``all``."""
    table: dict[str, Counter[str]] = {}
    for result in results:
        for key in (result.topology, "all"):
            table.setdefault(key, Counter())[result.outcome] += 1
    return table


def save(
    results: list[Result], label: str, wall: float, out_dir: Path, selection: str = ""
) -> tuple[Path, Path]:
    """``<label>.json`` (every test) and ``<label>.md`` (counts per topology, then every test)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    document = {
        "label": label,
        "selection": selection,
        "wall_seconds": round(wall, 1),
        "tests": [r.__dict__ for r in results],
    }
    json_path = out_dir / f"{label}.json"
    json_path.write_text(json.dumps(document, indent=1) + "\n")
    lines = [f"# {label}: {len(results)} tests in {wall:.0f} s", "", f"Selection: {selection}", ""]
    lines += count_table({label: results})
    lines += ["", "| test | topology | outcome | why |", "|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (r.topology, r.test)):
        lines.append(f"| `{r.test}` | {r.topology} | {r.outcome} | {_cell(r.reason)} |")
    md_path = out_dir / f"{label}.md"
    md_path.write_text("\n".join(lines) + "\n")
    return json_path, md_path


def load(path: Path) -> tuple[str, str, float, list[Result]]:
    """(label, selection, wall seconds, results) of a run saved by :func:`save`."""
    document = json.loads(path.read_text())
    results = [Result(**t) for t in document["tests"]]
    selection = str(document.get("selection", ""))
    return document["label"], selection, float(document["wall_seconds"]), results


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def count_table(runs: dict[str, list[Result]]) -> list[str]:
    """Markdown rows: per topology, passed/failed/skipped of each run."""
    per_run = {label: counts(results) for label, results in runs.items()}
    topologies = [*sorted({t for table in per_run.values() for t in table} - {"all"}), "all"]
    header = "| topology | " + " | ".join(f"{label} (pass/fail/skip)" for label in runs) + " |"
    lines = [header, "|---" * (len(runs) + 1) + "|"]
    for topology in topologies:
        cells = []
        for label in runs:
            c = per_run[label].get(topology, Counter())
            cells.append(" / ".join(str(c[o]) for o in OUTCOMES))
        lines.append(f"| {topology} | " + " | ".join(cells) + " |")
    return lines


def side_by_side(ours: Path, theirs: Path) -> str:
    """Markdown: the two runs' counts per topology and wall times, then every test whose outcome
    differs between them."""
    label_a, selection_a, wall_a, a = load(ours)
    label_b, selection_b, wall_b, b = load(theirs)
    lines = [
        f"Selection: {selection_a}"
        + ("" if selection_a == selection_b else f" ({label_b}: {selection_b})"),
        "",
    ]
    lines += count_table({label_a: a, label_b: b})
    lines += ["", f"Wall time: {label_a} {wall_a:.0f} s, {label_b} {wall_b:.0f} s.", ""]
    by_test = {r.test: r for r in b}
    differ = [
        (r, by_test[r.test])
        for r in a
        if r.test in by_test and r.outcome != by_test[r.test].outcome
    ]
    if differ:
        lines += [f"| test | {label_a} | {label_b} | why ({label_a}) |", "|---|---|---|---|"]
        for mine, other in sorted(differ, key=lambda p: p[0].test):
            lines.append(
                f"| `{mine.test}` | {mine.outcome} | {other.outcome} | {_cell(mine.reason)} |"
            )
    else:
        lines.append("Every test has the same outcome with both clients.")
    return "\n".join(lines) + "\n"


def update_page(page: Path, name: str, text: str) -> None:
    """Replace the block between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in ``page``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    content = page.read_text()
    if begin not in content or end not in content:
        raise SystemExit(f"{page}: no {begin} ... {end} block to replace")
    head, _, rest = content.partition(begin)
    _, _, tail = rest.partition(end)
    page.write_text(f"{head}{begin}\n{text}{end}{tail}")
