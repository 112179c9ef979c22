"""The broker simulator: a strict, in-process BlazingMQ broker for tests and demos.

A sans-I/O core (``broker``: the hub; ``session``: one client connection, with ``states`` (its
transition table), ``handshake``, ``flow`` (its data plane) and ``requests`` (its control
requests); ``dataplane``, ``queues``, ``routing``, ``expressions``) under an asyncio shell
(``server``), with fault injection (``faults``). ``pybmq sim`` runs it; ``pybmq.testing`` gives
pytest fixtures. The classes users start it with are importable from here.
"""

from pybmq.sim.config import BrokerConfig, BrokerHooks
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator

__all__ = ["BrokerConfig", "BrokerHooks", "BrokerSimulator", "ThreadedBrokerSimulator"]
