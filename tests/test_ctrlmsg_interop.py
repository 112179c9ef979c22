"""Live: the official SDK's first event (its ClientIdentity, in BER) decodes and re-encodes exactly.

A plain asyncio server on an ephemeral 127.0.0.1 port plays the broker just long enough to read one
event; the official `blazingmq` SDK runs in a subprocess pointed at it and is killed afterwards.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest
from eventframe import BER, CONTROL, make_event, split_event
from pybmq.generated.bmqp_ctrlmsg import ClientLanguage, ClientType, NegotiationMessage
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber

pytest.importorskip("blazingmq")

CLIENT = textwrap.dedent(
    """
    import os, sys
    import blazingmq

    print(os.getpid(), flush=True)
    # Starting the session connects and negotiates; our server never answers, so this blocks
    # until the test kills us.
    blazingmq.Session(lambda event: None, broker=f"tcp://127.0.0.1:{sys.argv[1]}", timeout=30)
    """
)


async def _read_event(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readexactly(8)
    length = int.from_bytes(head[:4], "big") & 0x7FFFFFFF
    return head + await reader.readexactly(length - 8)


@pytest.mark.interop
@pytest.mark.timeout(60)
async def test_official_sdk_client_identity(tmp_path: Path) -> None:
    received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            event = await _read_event(reader)
            if not received.done():
                received.set_result(event)
        except Exception as exc:  # surfaced through the future
            if not received.done():
                received.set_exception(exc)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    script = tmp_path / "sdk_client.py"
    script.write_text(CLIENT)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        pid = int(await asyncio.wait_for(proc.stdout.readline(), 30))
        raw = await asyncio.wait_for(received, 30)
    finally:
        if proc.returncode is None:
            proc.kill()
        await asyncio.wait_for(proc.wait(), 30)
        server.close()
        await server.wait_closed()

    event = split_event(raw)
    assert (event.type, event.type_specific, event.version, event.header_words) == (CONTROL, BER, 1, 2)
    msg = decode_ber(NegotiationMessage, event.payload)
    ci = msg.client_identity
    assert ci is not None and msg.selection == "client_identity"
    assert ci.pid == pid
    assert ci.client_type == ClientType.E_TCPCLIENT
    assert ci.sdk_language == ClientLanguage.E_CPP
    assert ci.protocol_version == 1 and ci.session_id >= 1 and ci.cluster_node_id == -1
    assert "PROTOCOL_ENCODING:BER,JSON" in ci.features.split(";")
    assert ci.process_name == str(script)  # the SDK reports sys.argv[0]
    assert len(ci.guid_info.client_id) == 12 and ci.guid_info.nano_seconds_from_epoch > 0
    again = encode_ber(msg)
    assert again == event.payload
    assert make_event(again, BER) == raw
