"""The BlazingMQ wire format: events as bytes, and nothing above them.

One module per job, readers and writers side by side per event kind: ``framing`` (cutting a
stream into events), ``control`` (CONTROL and heartbeat events), ``put``, ``push``, ``batches``
(ACK/CONFIRM/REJECT), and what they share: ``appdata``, ``properties``, ``options``, ``padding``,
``compression``, ``checksum``, ``guid``; ``dissect`` explains captured bytes, ``capture`` reads,
writes and masks ``pybmq tap`` recordings. Import from the
module that defines a name: this package re-exports nothing.
"""

__all__ = []
