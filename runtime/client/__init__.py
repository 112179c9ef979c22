"""The BlazingMQ client: a sans-I/O engine (``engine`` and the modules it is made of), its
state tables (``fsm``), what it reports (``events``) and takes (``options``), and two thin shells
over it: ``aio`` (asyncio) and ``sync`` (blocking, one I/O thread). Users import the shells as
``pybmq.AsyncSession`` / ``pybmq.Session``."""

__all__ = []
