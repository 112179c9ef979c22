"""Upstream BlazingMQ's integration suite, run with pybmq tool or bmqtool as its client."""
