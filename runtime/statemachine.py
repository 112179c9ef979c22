"""One step of a state machine written as a table, state x input → next state (h11 style).

Shared by the client engine's machines and the simulator's session: each keeps its states,
inputs and table next to its code, and every change of state goes through :func:`step`, so the
legal moves are all visible in the table and an illegal one fails in one place. :func:`mermaid`
draws a table (the documentation's state diagrams are drawn from the tables, as h11 draws its
own).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

from pybmq.errors import InvalidTransitionError

__all__ = ["mermaid", "step"]

StateT = TypeVar("StateT", bound=enum.Enum)
InputT = TypeVar("InputT", bound=enum.Enum)


def step(
    machine: str,
    table: Mapping[tuple[StateT, InputT], StateT],
    state: StateT,
    event: InputT,
) -> StateT:
    """The state after ``event`` in ``state``; InvalidTransitionError (naming ``machine``) if
    the table has no such move."""
    try:
        return table[(state, event)]
    except KeyError:
        raise InvalidTransitionError(machine, str(state.value), str(event.value)) from None


def mermaid(table: Mapping[tuple[StateT, InputT], StateT]) -> str:
    """A Mermaid ``stateDiagram-v2`` of ``table``: its state enum's first member is where the
    machine starts; one arrow per pair of states, labelled with every input that moves it so
    (in the table's order)."""
    states = type(next(iter(table.values())))
    arrows: dict[tuple[str, str], list[str]] = {}
    for (state, event), target in table.items():
        arrows.setdefault((str(state.name), str(target.name)), []).append(str(event.name))
    lines = ["stateDiagram-v2", f"    [*] --> {next(iter(states)).name}"]
    for (source, goal), events in arrows.items():
        lines.append(f"    {source} --> {goal}: {', '.join(events)}")
    return "\n".join(lines) + "\n"
