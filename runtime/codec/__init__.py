"""Support code the generated control-message codecs import: BER (``ber``) and JSON
(``jsoncodec``) primitives. Hand-written, small, and below everything that uses the codecs."""

__all__ = []
