"""Logger, Tracer and Metrics of the service, created once per process from the settings."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from chat_core.settings import get_settings

_settings = get_settings()

logger = Logger(service=_settings.service_name)
tracer = Tracer(service=_settings.service_name)
metrics = Metrics(service=_settings.service_name, namespace=_settings.metrics_namespace)

__all__ = ["MetricUnit", "logger", "metrics", "tracer"]
