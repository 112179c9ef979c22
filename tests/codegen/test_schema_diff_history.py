"""schema-diff on the real upstream history of bmqp_ctrlmsg.xsd.

The expectations below were established by reading `diff -u` of each consecutive pair of files
(tests/vectors/xsd/history/, then the last one against schema/bmqp_ctrlmsg.xsd), before the tool
existed. Each entry is (class, kind, path) with the reason it has that class. XML comments (the
schema's header comment gained "o AuthenticationMessage" in 2025-10-23) are not part of the model
and are rightly not reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pybmq.codegen.schemadiff import BER, JSON, Compat, diff_files

from tests.helpers.paths import TESTS_DIR

HISTORY = TESTS_DIR / "vectors" / "xsd" / "history"
CURRENT = TESTS_DIR.parent / "schema" / "bmqp_ctrlmsg.xsd"

C, A, W = Compat.COMPATIBLE, Compat.API, Compat.WIRE

# Four cluster-internal state messages changed together in 2025-10-23 and again in 2026-06-05.
STATE_MESSAGES = (
    "ReplicaStateRequest",
    "ReplicaStateResponse",
    "PrimaryStateRequest",
    "PrimaryStateResponse",
)

PAIR_1 = {
    # StopRequest gained `version` (int, default 1) at the end of its sequence: old decoders skip
    # the unknown member, new decoders read 1 when an old peer omits it; the field has a default.
    (C, "element-added", "StopRequest.version"),
}

PAIR_2 = {
    # ClusterSyncRequest/Response were empty sequences, replaced by the (equally empty) DummyType in
    # ClusterMessage: identical bytes in BER and JSON, but importers lose the classes.
    (A, "type-removed", "ClusterSyncRequest"),
    (A, "type-removed", "ClusterSyncResponse"),
    (A, "selection-type-changed", "ClusterMessage.clusterSyncRequest"),
    (A, "selection-type-changed", "ClusterMessage.clusterSyncResponse"),
    # queueUnassignedAdvisory (position 20) and queueUnAssignmentAdvisory (19) swap places, and
    # queueUnassignedAdvisory becomes DummyType: positional BER tags 19/20 now mean the other
    # selection (the content under tag 20 is the same, but under tag 19 it is not), and a JSON
    # `queueUnassignedAdvisory` object no longer carries the advisory.
    (W, "selection-reordered", "ClusterMessage.queueUnassignedAdvisory"),
    (W, "selection-reordered", "ClusterMessage.queueUnAssignmentAdvisory"),
    (W, "selection-type-changed", "ClusterMessage.queueUnassignedAdvisory"),
    # ...and the type QueueUnassignedAdvisory disappears while QueueUnAssignmentAdvisory takes over
    # its content (sequenceNumber first, then the old members in a new order).
    (A, "type-removed", "QueueUnassignedAdvisory"),
    (C, "doc-changed", "QueueUnAssignmentAdvisory"),
    (W, "element-added", "QueueUnAssignmentAdvisory.sequenceNumber"),  # on tag 0, primaryNodeId's
    (W, "element-reordered", "QueueUnAssignmentAdvisory.primaryNodeId"),  # tag 0 -> 3
    (W, "element-reordered", "QueueUnAssignmentAdvisory.primaryLeaseId"),  # tag 1 -> 2
    (W, "element-reordered", "QueueUnAssignmentAdvisory.partitionId"),  # tag 2 -> 1
    (W, "element-reordered", "QueueUnAssignmentAdvisory.queues"),  # tag 3 -> 4
    # NegotiationMessage: reverseConnectionRequest becomes `placeHolder` of DummyType on the same
    # position: BER keeps tag 2 (but the content differs), JSON sees another name.
    (C, "doc-changed", "NegotiationMessage"),
    (W, "selection-renamed", "NegotiationMessage.reverseConnectionRequest"),
    (W, "selection-type-changed", "NegotiationMessage.reverseConnectionRequest"),
    (A, "type-removed", "ReverseConnectionRequest"),
    # BrokerResponse: two heartbeat settings appended, both with defaults.
    (C, "element-added", "BrokerResponse.heartbeatIntervalMs"),
    (C, "element-added", "BrokerResponse.maxMissedHeartbeats"),
    # New types, nothing old refers to them.
    (C, "type-added", "DummyType"),
    (C, "type-added", "AuthenticationMessage"),
    (C, "type-added", "AuthenticationRequest"),
    (C, "type-added", "AuthenticationResponse"),
}
for _name in STATE_MESSAGES:
    PAIR_2 |= {
        (C, "doc-changed", _name),
        # Same tag 1, new name: BER fine, JSON members are matched by name.
        (W, "element-renamed", f"{_name}.sequenceNumber"),
        # Appended, required, no default: old decoders skip it; new decoders read an all-zero
        # PartitionSequenceNumber when an old peer omits it (value-initialised, as BDE does).
        (C, "element-added", f"{_name}.firstSyncPointAfterRolloverSequenceNumber"),
    }

PAIR_3 = {
    # ClientIdentity gained userAgent (string, default '') at the end, and its documentation.
    (C, "doc-changed", "ClientIdentity"),
    (C, "element-added", "ClientIdentity.userAgent"),
}

PAIR_4 = {
    # AuthenticationResponse.lifetimeMs int -> unsignedLong: negative values no longer decode on
    # the new side, values above 2^31-1 not on the old side (BER integers and JSON numbers alike).
    (W, "element-type-changed", "AuthenticationResponse.lifetimeMs"),
}
for _name in STATE_MESSAGES:
    PAIR_4 |= {
        # primaryLeaseId inserted at position 1, on the BER tag that latestSequenceNumber had
        # (for JSON alone it would be fine: a missing primaryLeaseId reads as 0)...
        (C, "doc-changed", _name),
        (W, "element-added", f"{_name}.primaryLeaseId"),
        # ...so the two members after it shift to tags 2 and 3.
        (W, "element-reordered", f"{_name}.latestSequenceNumber"),
        (W, "element-reordered", f"{_name}.firstSyncPointAfterRolloverSequenceNumber"),
    }

PAIR_5 = {
    # ClientIdentity: one more documentation sentence (printable ASCII only).
    (C, "doc-changed", "ClientIdentity"),
}
for _name in ("ReplicaDataRequest", "ReplicaDataResponse"):
    PAIR_5 |= {
        # partitionId moves to the front, primaryLeaseId is inserted after it (on tag 1, which
        # was partitionId's), replicaDataType moves from tag 0 to 2, the sequence numbers shift.
        (C, "doc-changed", _name),
        (W, "element-reordered", f"{_name}.partitionId"),
        (W, "element-added", f"{_name}.primaryLeaseId"),
        (W, "element-reordered", f"{_name}.replicaDataType"),
        (W, "element-reordered", f"{_name}.beginSequenceNumber"),
        (W, "element-reordered", f"{_name}.endSequenceNumber"),
    }

FILES = sorted(HISTORY.glob("*.xsd"))
PAIRS = [
    (FILES[0], FILES[1], PAIR_1, C),
    (FILES[1], FILES[2], PAIR_2, W),
    (FILES[2], FILES[3], PAIR_3, C),
    (FILES[3], FILES[4], PAIR_4, W),
    (FILES[4], CURRENT, PAIR_5, W),
]


def test_history_is_the_five_vendored_revisions() -> None:
    assert [f.name for f in FILES] == [
        "2023-07-11_fae9e586a.xsd",
        "2024-09-19_9075a4bdc.xsd",
        "2025-10-23_eef016a51.xsd",
        "2025-11-24_6e29feea7.xsd",
        "2026-06-05_fc9dfc1b2.xsd",
    ]


@pytest.mark.parametrize(
    ("old", "new", "expected", "worst"), PAIRS, ids=[f"{o.stem}->{n.stem}" for o, n, _, _ in PAIRS]
)
def test_each_upstream_revision_pair(old: Path, new: Path, expected: set, worst: Compat) -> None:  # type: ignore[type-arg]
    result = diff_files(old, new)
    found = [(c.compat, c.kind, c.path) for c in result.changes]
    assert len(found) == len(set(found)), "a change is reported twice"
    assert set(found) == expected
    assert result.worst is worst
    for change in result.changes:
        assert change.reason and "\n" not in change.reason
        assert bool(change.encodings) == (change.compat is W)


def test_encodings_named_for_the_wire_breaking_kinds() -> None:
    result = diff_files(FILES[1], FILES[2])
    by_key = {(c.kind, c.path): c for c in result.changes}
    # A rename on the same tag breaks JSON only; a move breaks BER only; a required addition both.
    assert by_key[("element-renamed", "ReplicaStateRequest.sequenceNumber")].encodings == (JSON,)
    assert by_key[
        ("selection-reordered", "ClusterMessage.queueUnAssignmentAdvisory")
    ].encodings == (BER,)
    added = by_key[
        ("element-added", "PrimaryStateRequest.firstSyncPointAfterRolloverSequenceNumber")
    ]
    assert added.compat is C and added.encodings == ()
    assert "all-default PartitionSequenceNumber" in added.reason
    collides = by_key[("element-added", "QueueUnAssignmentAdvisory.sequenceNumber")]
    assert collides.encodings == (BER,) and "carried primaryNodeId" in collides.reason
    assert "(id 2;" in added.detail
    moved = by_key[("selection-reordered", "ClusterMessage.queueUnassignedAdvisory")]
    assert moved.detail == "position (BER tag) 20 -> 19"
    same_shape = by_key[("selection-type-changed", "ClusterMessage.clusterSyncRequest")]
    assert "same shape" in same_shape.detail


def test_identical_files_have_no_changes() -> None:
    assert diff_files(CURRENT, CURRENT).changes == []


def test_reverse_direction_is_judged_too() -> None:
    # Going back from current to the 2026-06-05 revision: what was added is now removed.
    result = diff_files(CURRENT, FILES[4])
    by_key = {(c.kind, c.path): c.compat for c in result.changes}
    # Old decoders read 0 for it (API-only), but partitionId moves back onto its tag (BER).
    assert by_key[("element-removed", "ReplicaDataRequest.primaryLeaseId")] is A
    assert by_key[("element-reordered", "ReplicaDataRequest.partitionId")] is W
    back = diff_files(FILES[1], FILES[0])
    assert [(c.kind, c.path, c.compat) for c in back.changes] == [
        ("element-removed", "StopRequest.version", A)  # defaulted: wire fine, field gone
    ]
