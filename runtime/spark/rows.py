"""Rows ↔ messages for the Spark data source, in Arrow record batches (no pyspark import).

Spark hands Python writers Arrow record batches and takes Arrow record batches back from readers;
staying columnar avoids building a ``Row`` object per message. This module knows the read schema,
which Arrow (= Spark) column types become which BlazingMQ property types on write, and how a
received message becomes a row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pybmq.errors import UsageError
from pybmq.spark.options import READ_PROPERTY_TYPES

# BlazingMQ property types (bmqt::PropertyType), by the names the read schema uses for them.
BOOL, CHAR, SHORT, INT32, INT64, STRING, BINARY = (
    "BOOL",
    "CHAR",
    "SHORT",
    "INT32",
    "INT64",
    "STRING",
    "BINARY",
)
TYPED_FIELDS = {
    BOOL: "bool",
    CHAR: "char",
    SHORT: "short",
    INT32: "int32",
    INT64: "int64",
    STRING: "string",
    BINARY: "binary",
}

# Arrow type of a property column → BlazingMQ property type. Spark's types map 1:1 onto these
# (boolean, tinyint, smallint, int, bigint, string, binary); nothing else has a lossless match.
_ARROW_TO_BMQ: list[tuple[Any, str]] = [
    (pa.types.is_boolean, BOOL),
    (pa.types.is_int8, CHAR),
    (pa.types.is_int16, SHORT),
    (pa.types.is_int32, INT32),
    (pa.types.is_int64, INT64),
    (pa.types.is_string, STRING),
    (pa.types.is_large_string, STRING),
    (pa.types.is_binary, BINARY),
    (pa.types.is_large_binary, BINARY),
]

Typed = tuple[str, Any]  # (BlazingMQ property type, Python value)


def bmq_type_of(column: str, arrow_type: pa.DataType) -> str:
    for test, bmq_type in _ARROW_TO_BMQ:
        if test(arrow_type):
            return bmq_type
    raise UsageError(
        f"property column {column!r} has type {arrow_type}; BlazingMQ properties can be "
        "boolean, tinyint, smallint, int, bigint, string or binary"
    )


@dataclass(frozen=True)
class OutgoingMessage:
    payload: bytes
    properties: dict[str, Typed]


def check_write_schema(names: Sequence[str], property_columns: Sequence[str]) -> None:
    """Fail on the driver, before any task runs, when the DataFrame cannot be written."""
    if "payload" not in names:
        raise UsageError(f"writing to BlazingMQ needs a 'payload' column; columns are {names}")
    missing = [c for c in property_columns if c not in names]
    if missing:
        raise UsageError(f"propertyColumns {missing} are not columns of the DataFrame ({names})")
    if "payload" in property_columns:
        raise UsageError("'payload' cannot also be a property column")


def messages_from_batch(
    batch: pa.RecordBatch, property_columns: Sequence[str]
) -> Iterator[OutgoingMessage]:
    """The messages of one Arrow batch: payload (binary or UTF-8 string), the ``properties``
    map (as STRING properties) and typed properties from ``property_columns``."""
    schema = batch.schema
    payload_type = schema.field("payload").type
    if not (
        pa.types.is_binary(payload_type)
        or pa.types.is_large_binary(payload_type)
        or pa.types.is_string(payload_type)
        or pa.types.is_large_string(payload_type)
    ):
        raise UsageError(f"column 'payload' must be binary or string, not {payload_type}")
    is_text = pa.types.is_string(payload_type) or pa.types.is_large_string(payload_type)
    payloads = batch.column("payload").to_pylist()
    maps: list[Any] | None = None
    if "properties" in schema.names and "properties" not in property_columns:
        map_type = schema.field("properties").type
        if not (pa.types.is_map(map_type) and pa.types.is_string(map_type.key_type)):
            raise UsageError(f"column 'properties' must be map<string,string>, not {map_type}")
        maps = batch.column("properties").to_pylist()
    typed_columns = [
        (name, bmq_type_of(name, schema.field(name).type), batch.column(name).to_pylist())
        for name in property_columns
    ]
    for row, payload in enumerate(payloads):
        if payload is None:
            raise UsageError(f"row {row} of the batch has a null payload")
        data = payload.encode() if is_text else payload
        properties: dict[str, Typed] = {}
        if maps is not None and maps[row]:
            for key, value in maps[row]:
                if value is not None:
                    properties[key] = (STRING, str(value))
        for name, bmq_type, values in typed_columns:
            value = values[row]
            if value is not None:  # a null property is simply absent
                properties[name] = (bmq_type, value)
        yield OutgoingMessage(data, properties)


def _as_text(bmq_type: str, value: Any) -> str:
    if bmq_type == BOOL:
        return "true" if value else "false"
    if bmq_type == BINARY:
        return bytes(value).hex()
    return str(value)


@dataclass
class RowBuffer:
    """Collects received messages as columns and turns them into an Arrow record batch.

    ``columns`` (``propertySchema``) are properties as typed columns: a property of a type the
    column does not hold (see :data:`READ_PROPERTY_TYPES`), or a missing one, is null."""

    queue: str
    columns: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        self.guids: list[str] = []
        self.payloads: list[bytes] = []
        self.texts: list[list[tuple[str, str]]] = []
        self.typed: list[list[tuple[str, dict[str, Any]]]] = []
        self.values: list[list[Any]] = [[] for _ in self.columns]
        self._accepts = [(name, READ_PROPERTY_TYPES[sql]) for name, sql in self.columns]

    def __len__(self) -> int:
        return len(self.guids)

    def add(self, guid: bytes, payload: bytes, properties: Mapping[str, Typed]) -> None:
        self.guids.append(guid.hex())
        self.payloads.append(payload)
        texts = []
        typed = []
        for key, (bmq_type, value) in properties.items():
            texts.append((key, _as_text(bmq_type, value)))
            typed.append((key, {"type": bmq_type, TYPED_FIELDS[bmq_type]: value}))
        self.texts.append(texts)
        self.typed.append(typed)
        for (name, accepts), values in zip(self._accepts, self.values, strict=True):
            found = properties.get(name)
            values.append(found[1] if found is not None and found[0] in accepts else None)

    def to_batch(self, schema: pa.Schema) -> pa.RecordBatch:
        """One record batch in ``schema`` (Spark checks the schema of a returned batch exactly,
        field names of map entries and nullability included, so the caller passes Spark's)."""
        columns = [
            [self.queue] * len(self.guids),
            self.guids,
            self.payloads,
            self.texts,
            self.typed,
            *self.values,
        ]
        arrays = [pa.array(column, schema.field(i).type) for i, column in enumerate(columns)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
