"""The result of comparing two schema revisions: each ``Change`` with its ``Compat`` class, and
the ``SchemaDiff`` that holds them. Shared by the XSD differ (``schemadiff``), the layout differ
(``layoutdiff``), the CI gate (``schemacheck``) and the CLI reports."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["BER", "BOTH", "JSON", "KINDS", "Change", "Compat", "SchemaDiff"]

BER = "BER"
JSON = "JSON"
BOTH = (BER, JSON)


class Compat(enum.IntEnum):
    """How far a change reaches; ordered so the worst change of a diff is ``max()``."""

    COMPATIBLE = 0
    API = 1
    WIRE = 2

    @property
    def label(self) -> str:
        return _LABELS[self]

    @classmethod
    def from_fail_on(cls, value: str) -> Compat | None:
        """``--fail-on`` value → lowest class that fails (None for ``none``)."""
        return {"wire": cls.WIRE, "api": cls.API, "none": None}[value]


_LABELS = {
    Compat.COMPATIBLE: "compatible",
    Compat.API: "api-breaking",
    Compat.WIRE: "wire-breaking",
}


@dataclass(frozen=True)
class Change:
    """One difference between two schema revisions and its class.

    ``path`` names the thing changed (``Type`` or ``Type.member`` or ``Enum.VALUE``); ``kind`` is
    a fixed vocabulary (see ``KINDS``); ``encodings`` lists the wire encodings that break (empty
    unless wire-breaking); ``reason`` is one line saying why the class applies.
    """

    kind: str
    path: str
    detail: str
    compat: Compat
    reason: str
    encodings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "path": self.path,
            "detail": self.detail,
            "class": self.compat.label,
            "encodings": list(self.encodings),
            "reason": self.reason,
        }


KINDS = (
    "package-changed",
    "type-added",
    "type-removed",
    "type-kind-changed",
    "restriction-changed",
    "element-added",
    "element-removed",
    "element-renamed",
    "element-reordered",
    "element-type-changed",
    "element-occurs-changed",
    "element-default-changed",
    "selection-added",
    "selection-removed",
    "selection-renamed",
    "selection-reordered",
    "selection-type-changed",
    "bdem-id-changed",
    "enum-value-added",
    "enum-value-removed",
    "enum-value-renamed",
    "enum-value-renumbered",
    "doc-changed",
)


@dataclass
class SchemaDiff:
    """Every change between ``old`` and ``new``, in a stable order (schema order of the new file)."""

    old_label: str
    new_label: str
    changes: list[Change] = field(default_factory=list)

    @property
    def worst(self) -> Compat | None:
        return max((c.compat for c in self.changes), default=None)

    def counts(self) -> dict[str, int]:
        return {c.label: sum(1 for x in self.changes if x.compat is c) for c in Compat}

    def fails(self, threshold: Compat | None) -> bool:
        """True when a change at or above ``threshold`` exists (never for threshold None)."""
        return threshold is not None and any(c.compat >= threshold for c in self.changes)
