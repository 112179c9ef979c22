"""Options of PUT/PUSH messages: sub-queue infos (old, packed and plain forms) and group ids.

Every option starts with an OptionHeader (bmqp_protocol.h); a packed SUB_QUEUE_INFOS option has no
content and carries the default sub-queue's RDA counter in its words field. Older brokers send
bare sub-queue ids (SUB_QUEUE_IDS_OLD); readers turn every form into ``SubQueueInfo`` records.
The readers and writers are rendered from the layout spec with the messages they belong to
(``pybmq.generated.wire_messages``); this module is where the wire layer names them.
"""

from __future__ import annotations

from pybmq.generated.wire_messages import (
    encode_msg_group_id,
    encode_packed_sub_queue_info,
    encode_sub_queue_ids_old,
    encode_sub_queue_infos,
)
from pybmq.generated.wire_messages import read_options as parse_options

__all__ = [
    "encode_msg_group_id",
    "encode_packed_sub_queue_info",
    "encode_sub_queue_ids_old",
    "encode_sub_queue_infos",
    "parse_options",
]
