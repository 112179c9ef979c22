"""What a publish carries (``BlazingMQPublishCommand``) and what a handler may return to set
BlazingMQ properties on its reply (``BlazingMQResponse``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faststream.response.publish_type import PublishType
from faststream.response.response import PublishCommand, Response
from typing_extensions import override

__all__ = ["BlazingMQPublishCommand", "BlazingMQResponse"]


class BlazingMQResponse(Response):
    """A handler's result with BlazingMQ ``properties`` (typed; see ``pybmq.faststream.parser``)
    and ``compression`` (``"zlib"``/``"none"``; None: the session's threshold decides)."""

    def __init__(
        self,
        body: Any,
        *,
        headers: dict[str, Any] | None = None,
        correlation_id: str | None = None,
        properties: Mapping[str, Any] | None = None,
        compression: str | None = None,
    ) -> None:
        super().__init__(body=body, headers=headers, correlation_id=correlation_id)
        self.properties = properties
        self.compression = compression

    @override
    def as_publish_command(self) -> BlazingMQPublishCommand:
        """The command a publisher posts for this result."""
        return BlazingMQPublishCommand(
            self.body,
            queue="",
            headers=self.headers,
            correlation_id=self.correlation_id,
            properties=self.properties,
            compression=self.compression,
            _publish_type=PublishType.PUBLISH,
        )


class BlazingMQPublishCommand(PublishCommand):
    """One publish: the body, the queue URI (``destination``), headers and typed properties."""

    def __init__(
        self,
        message: Any,
        *,
        queue: str,
        _publish_type: PublishType,
        headers: dict[str, Any] | None = None,
        correlation_id: str | None = None,
        reply_to: str = "",
        properties: Mapping[str, Any] | None = None,
        compression: str | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(
            body=message,
            destination=queue,
            correlation_id=correlation_id,
            headers=headers,
            reply_to=reply_to,
            _publish_type=_publish_type,
        )
        self.properties = properties
        self.compression = compression
        self.timeout = timeout

    @classmethod
    def from_cmd(cls, cmd: PublishCommand) -> BlazingMQPublishCommand:  # type: ignore[override]
        """A generic FastStream command (a handler's plain return value) as ours."""
        if isinstance(cmd, BlazingMQPublishCommand):
            return cmd
        return cls(
            cmd.body,
            queue=cmd.destination,
            headers=cmd.headers,
            correlation_id=cmd.correlation_id,
            reply_to=cmd.reply_to,
            _publish_type=cmd.publish_type,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(body={self.body!r}, queue={self.destination!r}, "
            f"headers={self.headers}, correlation_id={self.correlation_id!r})"
        )
