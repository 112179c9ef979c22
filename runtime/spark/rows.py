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
from pybmq.wire.properties import MessageProperties, PropertyType

__all__ = [
    "BINARY",
    "BOOL",
    "CHAR",
    "INT32",
    "INT64",
    "SHORT",
    "STRING",
    "TYPED_FIELDS",
    "Outgoing",
    "RowBuffer",
    "Typed",
    "bmq_type_of",
    "messages_from_batch",
]

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

_TYPE_OF_FIELD = {field: bmq_type for bmq_type, field in TYPED_FIELDS.items()}

Typed = tuple[str, Any]  # (BlazingMQ property type, Python value)


def bmq_type_of(column: str, arrow_type: pa.DataType) -> str:
    for test, bmq_type in _ARROW_TO_BMQ:
        if test(arrow_type):
            return bmq_type
    raise UsageError(
        f"property column {column!r} has type {arrow_type}; BlazingMQ properties can be "
        "boolean, tinyint, smallint, int, bigint, string or binary"
    )


Outgoing = tuple[bytes, MessageProperties | None]  # a message as ``Queue.post_batch`` takes it


def messages_from_batch(
    batch: pa.RecordBatch, property_columns: Sequence[str]
) -> Iterator[Outgoing]:
    """The messages of one Arrow batch: payload (binary or UTF-8 string), the ``properties``
    map (as STRING properties) and typed properties from ``property_columns``, ready to post."""
    schema = batch.schema
    payload_type = schema.field("payload").type
    payload = batch.column("payload")
    if pa.types.is_string(payload_type) or pa.types.is_large_string(payload_type):
        payload = payload.cast(pa.binary())  # the UTF-8 bytes as they are: no per-row encode
    elif not (pa.types.is_binary(payload_type) or pa.types.is_large_binary(payload_type)):
        raise UsageError(f"column 'payload' must be binary or string, not {payload_type}")
    maps: list[Any] | None = None
    if "properties" in schema.names and "properties" not in property_columns:
        map_type = schema.field("properties").type
        if not (pa.types.is_map(map_type) and pa.types.is_string(map_type.key_type)):
            raise UsageError(f"column 'properties' must be map<string,string>, not {map_type}")
        maps = batch.column("properties").to_pylist()
    typed_columns = [
        (
            name,
            int(PropertyType[bmq_type_of(name, schema.field(name).type)]),
            batch.column(name).to_pylist(),
        )
        for name in property_columns
    ]
    string = int(PropertyType.STRING)
    for row, data in enumerate(payload.to_pylist()):
        if data is None:
            raise UsageError(f"row {row} of the batch has a null payload")
        items: dict[str, tuple[int, Any]] = {}
        if maps is not None and maps[row]:
            for key, value in maps[row]:
                if value is not None:
                    items[key] = (string, str(value))
        for name, ptype, values in typed_columns:
            value = values[row]
            if value is not None:  # a null property is simply absent
                items[name] = (ptype, value)
        yield data, (MessageProperties(items) if items else None)


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
        # Flat columns, one entry per row or per property: no per-row dict, tuple or list.
        self.guids: list[str] = []
        self.payloads: list[bytes] = []
        self.offsets: list[int] = [0]  # row i's properties are entries offsets[i]:offsets[i+1]
        self.keys: list[str] = []
        self.texts: list[str] = []
        self.types: list[str] = []
        self.raw: list[Any] = []  # each property's value, spread over the typed fields later
        self.values: list[list[Any]] = [[] for _ in self.columns]
        self._accepts = [(name, READ_PROPERTY_TYPES[sql]) for name, sql in self.columns]

    def __len__(self) -> int:
        return len(self.guids)

    def add(self, guid: bytes, payload: bytes, properties: Mapping[str, Typed]) -> None:
        self.guids.append(guid.hex())
        self.payloads.append(payload)
        keys, texts, types, raw = self.keys, self.texts, self.types, self.raw
        for key, (bmq_type, value) in properties.items():
            keys.append(key)
            texts.append(_as_text(bmq_type, value))
            types.append(bmq_type)
            raw.append(value)
        self.offsets.append(len(keys))
        for (name, accepts), values in zip(self._accepts, self.values, strict=True):
            found = properties.get(name)
            values.append(found[1] if found is not None and found[0] in accepts else None)

    def to_batch(self, schema: pa.Schema) -> pa.RecordBatch:
        """One record batch in ``schema`` (Spark checks the schema of a returned batch exactly,
        field names of map entries and nullability included, so the caller passes Spark's)."""
        text_type, typed_type = schema.field(3).type, schema.field(4).type
        offsets = pa.array(self.offsets, pa.int32())
        keys = pa.array(self.keys, text_type.key_type)
        struct = typed_type.item_type
        fields = [struct.field(i) for i in range(struct.num_fields)]
        types, raw = self.types, self.raw
        children: list[list[Any]] = [types]
        for field in fields[1:]:  # a struct field per BlazingMQ type: the value sits in its own
            own = _TYPE_OF_FIELD[field.name]
            children.append([v if t == own else None for t, v in zip(types, raw, strict=True)])
        items = pa.StructArray.from_arrays(
            [pa.array(column, field.type) for column, field in zip(children, fields, strict=True)],
            fields=fields,
        )
        arrays = [
            pa.array([self.queue] * len(self.guids), schema.field(0).type),
            pa.array(self.guids, schema.field(1).type),
            pa.array(self.payloads, schema.field(2).type),
            pa.MapArray.from_arrays(
                offsets, keys, pa.array(self.texts, text_type.item_type), type=text_type
            ),
            pa.MapArray.from_arrays(offsets, keys, items, type=typed_type),
            *(pa.array(values, schema.field(5 + i).type) for i, values in enumerate(self.values)),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
