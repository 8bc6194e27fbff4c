"""A small stand-in for the Lambda context object handlers receive (name, ARN, request id, deadline)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass
class LambdaContext:
    """What Powertools and the post path read from a context; `remaining_ms` counts down in real time."""

    function_name: str = "test-function"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/test-function"
    log_stream_name: str = "2024/01/01/[$LATEST]test"
    remaining_ms: int = 29_000
    _started: float = field(default_factory=time.monotonic, repr=False)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.remaining_ms - int((time.monotonic() - self._started) * 1000))
