"""pybmq: pure-Python, code-generated bindings and client for the BlazingMQ protocol."""

__version__ = "0.1.0"
