"""The client session engine: sans-I/O (no sockets, threads or clocks), one object per connection.

The shell feeds it what happened — ``receive_data(bytes, now)``, user commands (``open_queue``,
``post``, ``confirm``, ``stop`` …, each with ``now``), ``connection_made``/``connection_lost`` and
``handle_timeout(now)`` — and takes out what to do: ``data_to_send()`` (bytes for the socket),
``next_events()`` (records from :mod:`pybmq.client.events`) and ``next_deadline()`` (when to call
``handle_timeout`` next). All state changes go through the tables in :mod:`pybmq.client.fsm`.

Posts and confirms are only buffered by the commands; ``data_to_send()`` turns everything buffered
since the last call into one PUT event and one CONFIRM event, which is how a shell that flushes
once per loop turn gets one event per turn.
"""

from __future__ import annotations

from pybmq.client.suspension import HostHealthLayer


class ClientEngine(HostHealthLayer):
    """One BlazingMQ client session over one connection, without I/O. See the module docstring."""
