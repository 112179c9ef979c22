"""The other BlazingMQ schemas: broker config, domain config, admin commands, statistics.

Each ``schema/<name>.xsd`` becomes ``pybmq.generated.<name>`` (types) plus ``<name>_json`` and
``<name>_ber``, by the same generator as the control messages; nothing here is schema-specific.
"""

from __future__ import annotations

from pathlib import Path

from pybmq.codegen.artifact import Artifact
from pybmq.codegen.bindings import generate_bindings

__all__ = ["OTHER_SCHEMAS", "generate_other_schemas"]

# schema file stem -> what it describes (upstream component in schema/UPSTREAM.md)
OTHER_SCHEMAS: dict[str, str] = {
    "mqbcfg": "broker configuration (bmqbrkrcfg.json, clusters.json)",
    "mqbconf": "domain configuration (domains/*.json)",
    "mqbcmd": "admin commands and their results",
    "bmqstm": "statistics snapshots",
}


def generate_other_schemas(schema_dir: Path) -> list[Artifact]:
    """The driver's generator: bindings for every schema in ``OTHER_SCHEMAS``."""
    artifacts: list[Artifact] = []
    for name in OTHER_SCHEMAS:
        artifacts.extend(generate_bindings(schema_dir / f"{name}.xsd", name))
    return artifacts
