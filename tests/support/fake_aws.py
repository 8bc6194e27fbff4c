"""Test-wide environment: fake AWS credentials, no real AWS endpoint ever reached (imported by every
conftest before anything imports boto3)."""

from __future__ import annotations

import os

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SECURITY_TOKEN", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ["AWS_REGION"] = "us-east-1"
os.environ["AWS_ACCOUNT_ID_ENDPOINT_MODE"] = "disabled"
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "chat-history")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "ChatHistory")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_DEV", "false")

# After the environment is set: botocore reads none of it at import, but nothing here should come first.
from chat_local.botocore_data import share_botocore_data

share_botocore_data()
