"""Admin commands: what the simulator answers to an ``adminCommand`` control message.

A real broker reads the command as words (mqbcmd_parseutil.cpp, case-insensitive, an optional
``ENCODING TEXT|JSON_COMPACT|JSON_PRETTY`` first), runs it, and answers one
``adminCommandResponse`` whose text is the ``mqbcmd`` Result, printed for people or as JSON
(mqbcmd_humanprinter / mqbcmd_jsonprinter). The simulator follows the same grammar and answers
this subset (another command of the grammar is an ``error`` Result naming the command; words
outside the grammar get a line of text, as from a broker):

- ``HELP``: the commands below;
- ``DOMAINS DOMAIN <domain> INFOS``: the domain's routing and the queues it holds;
- ``DOMAINS DOMAIN <domain> PURGE`` and ``DOMAINS DOMAIN <domain> QUEUE <queue> PURGE <appId|*>``:
  drop the messages not yet delivered (delivered, unconfirmed ones stay with their consumers);
- ``DOMAINS DOMAIN <domain> QUEUE <queue> LIST [<appId>] <offset> <count|unlimited>``: the
  messages waiting, GUID and size;
- ``STAT SHOW``: the broker's counters and a table of every queue (pending, unconfirmed, posted);
- ``CLUSTERS LIST``: the one (local) cluster the simulator is.

Sans-I/O: ``answer(broker, text)`` is a function of the broker's state and the command text.
Only a session that negotiated as ``E_TCPADMIN`` (as ``pybmq admin`` and upstream's admin clients
do) may send one: an ordinary client that tries is disconnected, as the broker disconnects it.
``BrokerConfig.admin_users`` narrows it further to sessions authenticated as those users (the
broker's authorizer). Answers are bounded: LIST hands out at most ``MAX_LIST_MESSAGES`` per
command (page with the offset), and an answer over ``MAX_ANSWER_SIZE`` is replaced by an error.
Control characters a command echoes are escaped in text answers.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated import mqbcmd
from pybmq.generated.mqbcmd_json import encode_json
from pybmq.printable import escape_controls
from pybmq.sim.routing import routing_mode
from pybmq.uri import parse_queue_uri

if TYPE_CHECKING:
    from pybmq.sim.broker import Broker
    from pybmq.sim.queues import SimQueue
    from pybmq.sim.requests import QueueRequests

__all__ = [
    "CLUSTER_NAME",
    "COMMANDS",
    "COMMAND_WORDS",
    "MAX_ANSWER_SIZE",
    "MAX_COMMAND_LENGTH",
    "MAX_LIST_MESSAGES",
    "CommandError",
    "answer",
    "escape_controls",
    "handle_request",
    "render",
]

CLUSTER_NAME = "pybmq-sim"
# Longest command text read (a real command is a few words); longer is an error Result.
MAX_COMMAND_LENGTH = 4096
# The most messages one LIST answers (a bigger count, or "unlimited", gets this many: page on with
# the offset), and the longest answer text sent (a control event is at most 1 MiB).
MAX_LIST_MESSAGES = 1000
MAX_ANSWER_SIZE = 512 * 1024

COMMANDS: tuple[tuple[str, str], ...] = (
    ("HELP", "Show the commands this broker answers"),
    ("DOMAINS DOMAIN <domain> INFOS", "Show a domain's configuration and queues"),
    ("DOMAINS DOMAIN <domain> PURGE", "Purge every queue of a domain"),
    (
        "DOMAINS DOMAIN <domain> QUEUE <queue> PURGE <appId|*>",
        "Purge a queue's undelivered messages for one appId, or for all (*)",
    ),
    (
        "DOMAINS DOMAIN <domain> QUEUE <queue> LIST [<appId>] <offset> <count|unlimited>",
        "List a queue's undelivered messages",
    ),
    ("STAT SHOW", "Show the broker's counters and every queue's"),
    ("CLUSTERS LIST", "List the clusters this broker knows"),
)


# The first words a broker's command grammar has (mqbcmd.xsd's Command choice, spelled as the
# broker reads them); a command starting otherwise does not parse, and is answered as plain text.
COMMAND_WORDS = frozenset(
    {"HELP", "DOMAINS", "CONFIGPROVIDER", "STAT", "CLUSTERS", "BROKERCONFIG", "ENCODING"}
)


class CommandError(Exception):
    """A command the simulator cannot run; answered as an ``error`` Result."""


def _undecodable(words: list[str]) -> str | None:
    """A broker answers a command it cannot parse with a line of text (not a Result, whatever
    the encoding asked for); None for a command that parses."""
    if words and words[0].upper() not in COMMAND_WORDS:
        return f"Unable to decode command: unknown command word {words[0]!r} (send HELP)"
    return None


def handle_request(session: QueueRequests, request: ctrl.AdminCommand) -> ctrl.ControlMessage:
    """The ``adminCommandResponse`` to a session's ``adminCommand``; ProtocolError (the session
    is closed) if the session did not negotiate as an admin client."""
    identity = session.client_identity
    if identity is None or identity.client_type != ctrl.ClientType.E_TCPADMIN:
        raise ProtocolError("an admin command from a client that is not an admin connection")
    allowed = session.broker.config.admin_users
    if allowed is not None:
        principal = None if session.auth is None else session.auth.principal
        if principal not in allowed:
            result = mqbcmd.Result(
                error=mqbcmd.Error(message="not authorized to run admin commands")
            )
            return _response(render(result, mqbcmd.EncodingFormat.TEXT))
    return _response(answer(session.broker, request.command))


def _response(text: str) -> ctrl.ControlMessage:
    return ctrl.ControlMessage(admin_command_response=ctrl.AdminCommandResponse(text=text))


def answer(broker: Broker, text: str) -> str:
    """The text of the ``adminCommandResponse`` to ``text`` (at most MAX_ANSWER_SIZE)."""
    encoding = mqbcmd.EncodingFormat.TEXT
    try:
        if len(text) > MAX_COMMAND_LENGTH:
            raise CommandError(f"command of {len(text)} characters (at most {MAX_COMMAND_LENGTH})")
        words = text.split()
        if words and words[0].upper() == "ENCODING":
            encoding = _encoding(words[1:2])
            words = words[2:]
        undecodable = _undecodable(words)
        if undecodable is not None:
            return undecodable
        result = _run(broker, words)
    except CommandError as exc:
        result = mqbcmd.Result(error=mqbcmd.Error(message=str(exc)))
    rendered = render(result, encoding)
    if len(rendered) > MAX_ANSWER_SIZE:
        too_big = f"the answer is {len(rendered)} characters (at most {MAX_ANSWER_SIZE})"
        rendered = render(mqbcmd.Result(error=mqbcmd.Error(message=too_big)), encoding)
    return rendered


def render(result: mqbcmd.Result, encoding: mqbcmd.EncodingFormat) -> str:
    if encoding == mqbcmd.EncodingFormat.TEXT:
        return escape_controls("\n".join(_human(result)))
    document = json.loads(encode_json(result))
    if encoding == mqbcmd.EncodingFormat.JSON_PRETTY:
        return json.dumps(document, indent=4)
    return json.dumps(document, separators=(",", ":"))


def _encoding(words: list[str]) -> mqbcmd.EncodingFormat:
    choices = {e.name: e for e in mqbcmd.EncodingFormat}
    if not words or words[0].upper() not in choices:
        given = f"got {words[0]!r}" if words else "none given"
        raise CommandError(f"ENCODING must be followed by one of {', '.join(choices)}: {given}")
    return choices[words[0].upper()]


def _run(broker: Broker, words: list[str]) -> mqbcmd.Result:
    upper = [w.upper() for w in words]
    if not words:
        raise CommandError("empty command: send HELP for the list of commands")
    if upper == ["HELP"]:
        specs = [mqbcmd.CommandSpec(command=c, description=d) for c, d in COMMANDS]
        return mqbcmd.Result(help=mqbcmd.Help(commands=specs))
    if upper == ["STAT", "SHOW"]:
        return mqbcmd.Result(stats="\n".join(_stats(broker)))
    if upper == ["CLUSTERS", "LIST"]:
        cluster = mqbcmd.ClusterInfo(locality=mqbcmd.Locality.local, name=CLUSTER_NAME)
        return mqbcmd.Result(cluster_list=mqbcmd.ClusterList(clusters=[cluster]))
    if upper[:2] == ["DOMAINS", "DOMAIN"] and len(words) >= 4:
        return _domain(broker, words[2], words[3:])
    raise CommandError(f"not supported by the simulator: {' '.join(words)} (send HELP)")


def _domain(broker: Broker, domain: str, words: list[str]) -> mqbcmd.Result:
    mode = routing_mode(domain)
    if mode is None:
        raise CommandError(f"domain '{domain}' does not exist")
    queues = [q for q in broker.store.queues.values() if _domain_of(q) == domain]
    upper = [w.upper() for w in words]
    if upper == ["INFOS"]:
        config = {"name": domain, "routing": mode.value}
        info = mqbcmd.DomainInfo(
            name=domain,
            config_json=json.dumps(config),
            cluster_name=CLUSTER_NAME,
            queue_uris=sorted(q.uri for q in queues),
        )
        return mqbcmd.Result(domain_info=info)
    if upper == ["PURGE"]:
        return _purged([d for q in queues for d in _purge(q, "*")])
    if upper[0] == "QUEUE" and len(words) >= 3:
        uri = f"bmq://{domain}/{words[1]}"
        queue = broker.store.queues.get(uri)
        if queue is None:
            raise CommandError(f"queue '{words[1]}' not found in domain '{domain}'")
        if upper[2] == "PURGE" and len(words) == 4:
            return _purged(list(_purge(queue, words[3])))
        if upper[2] == "LIST" and len(words) in (5, 6):
            return _list(queue, words[3:])
    raise CommandError(f"not supported by the simulator: DOMAINS DOMAIN {domain} {' '.join(words)}")


def _domain_of(queue: SimQueue) -> str | None:
    uri = parse_queue_uri(queue.uri)
    return None if uri is None else uri.domain


def _purge(queue: SimQueue, app_id: str) -> Iterator[mqbcmd.PurgedQueueDetails]:
    if app_id != "*" and app_id not in queue.streams:
        raise CommandError(f"queue {queue.uri} has no appId '{app_id}'")
    for name, stream in queue.streams.items():
        if app_id not in ("*", name):
            continue
        purged = list(stream.pending)
        stream.pending.clear()
        size = sum(m.size for m in purged)
        queue.release(purged)
        yield mqbcmd.PurgedQueueDetails(
            queue_uri=queue.uri,
            app_id=name,
            num_messages_purged=len(purged),
            num_bytes_purged=size,
        )


def _purged(details: list[mqbcmd.PurgedQueueDetails]) -> mqbcmd.Result:
    results = [mqbcmd.PurgeQueueResult(queue=d) for d in details]
    return mqbcmd.Result(purged_queues=mqbcmd.PurgedQueues(queues=results))


def _list(queue: SimQueue, words: list[str]) -> mqbcmd.Result:
    app_id = words[0] if len(words) == 3 else next(iter(queue.streams))
    offset_text, count_text = words[-2:]
    if app_id not in queue.streams:
        raise CommandError(f"queue {queue.uri} has no appId '{app_id}'")
    try:
        offset = int(offset_text)
        count = 0 if count_text.lower() == "unlimited" else int(count_text)
    except ValueError:
        raise CommandError(
            f"LIST needs integers: <offset> <count>, got {offset_text} {count_text}"
        ) from None
    pending = queue.streams[app_id].pending
    start = offset if offset >= 0 else max(len(pending) + offset, 0)
    count = MAX_LIST_MESSAGES if count <= 0 else min(count, MAX_LIST_MESSAGES)
    chosen = list(itertools.islice(pending, start, start + count))
    messages = [mqbcmd.Message(guid=m.guid.hex().upper(), size_bytes=m.size) for m in chosen]
    contents = mqbcmd.QueueContents(
        messages=messages, offset=start, total_queue_messages=len(pending)
    )
    return mqbcmd.Result(queue_contents=contents)


def _stats(broker: Broker) -> Iterator[str]:
    s = broker.stats
    open_sessions = sum(1 for session in broker.sessions if not session.closed)
    yield (
        f"sessions {open_sessions} open ({s.sessions} since start); puts {s.puts}, acks {s.acks}, "
        f"nacks {s.nacks}, pushes {s.pushes}, confirms {s.confirms}, redelivered {s.redelivered}"
    )
    rows = [("queue", "appId", "pending", "unconfirmed", "consumers", "posted")]
    for queue in sorted(broker.store.queues.values(), key=lambda q: q.uri):
        for name, stream in queue.streams.items():
            unconfirmed = sum(len(c.unconfirmed) for c in stream.consumers)
            rows.append(
                (
                    queue.uri,
                    name,
                    str(len(stream.pending)),
                    str(unconfirmed),
                    str(len(stream.consumers)),
                    str(queue.posted),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()


def _human(result: mqbcmd.Result) -> Iterator[str]:
    """A Result for people (in the spirit of mqbcmd_humanprinter, not its exact layout)."""
    if result.error is not None:
        yield f"Error: {result.error.message}"
    elif result.help is not None:
        yield "Commands:"
        for spec in result.help.commands:
            yield f"  {spec.command}"
            yield f"      {spec.description}"
    elif result.stats is not None:
        yield result.stats
    elif result.cluster_list is not None:
        for cluster in result.cluster_list.clusters:
            yield f"{cluster.name} ({cluster.locality.name})"
    elif result.domain_info is not None:
        info = result.domain_info
        yield f"Domain {info.name} (cluster {info.cluster_name})"
        yield f"  config: {info.config_json}"
        yield f"  queues: {len(info.queue_uris)}"
        yield from (f"    {uri}" for uri in info.queue_uris)
    elif result.purged_queues is not None:
        for item in result.purged_queues.queues:
            if item.queue is not None:
                q = item.queue
                yield (
                    f"Purged {q.num_messages_purged} message(s) ({q.num_bytes_purged} bytes) "
                    f"from {q.queue_uri}, appId {q.app_id}"
                )
            elif item.error is not None:
                yield f"Error: {item.error.message}"
        if not result.purged_queues.queues:
            yield "Nothing to purge"
    elif result.queue_contents is not None:
        contents = result.queue_contents
        yield (
            f"{len(contents.messages)} of {contents.total_queue_messages} message(s), "
            f"from offset {contents.offset}"
        )
        yield from (f"  {m.guid}  {m.size_bytes} bytes" for m in contents.messages)
    else:
        yield json.dumps(json.loads(encode_json(result)))
