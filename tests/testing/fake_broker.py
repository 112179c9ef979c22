"""A stand-in for ``bmqbrkr`` that only does what ``RealBroker`` watches: reads the port from the
config folder it is given, listens there, says STARTED (or, the port taken, what the real one
logs then, and exits), and (with IGNORE_TERM) shrugs off SIGTERM so the SIGKILL escalation can be
tested without the real binary. It never speaks the protocol (a connection is accepted and left
unanswered); with EXIT_AFTER=S it exits with status 3 after S seconds, as a broker that crashes
once started."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

with open(os.path.join(sys.argv[1], "bmqbrkrcfg.json")) as file:
    config = json.load(file)
port = config["appConfig"]["networkInterfaces"]["tcpInterface"]["port"]
if os.environ.get("IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    server.bind(("127.0.0.1", port))
except OSError:  # what the real one logs when its port is taken
    print(f"#TCP_LISTEN_FAILED failed listening to '127.0.0.1:{port}'", flush=True)
    sys.exit(6)
server.listen()
print(f"STARTED bmqbrkr [pid: {os.getpid()}]", flush=True)
exit_at = time.monotonic() + float(os.environ.get("EXIT_AFTER", "inf"))
while time.monotonic() < exit_at:
    time.sleep(min(1.0, max(exit_at - time.monotonic(), 0.0)))
sys.exit(3)
