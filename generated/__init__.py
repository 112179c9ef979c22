"""Code emitted by ``pybmq.codegen``; never edited by hand (``make generate``)."""

__all__: list[str] = []
