"""The package version, in a module of its own so that any layer can read it without importing
the package ``__init__`` (which would be an upward import)."""

__all__ = []

__version__ = "0.2.0"
