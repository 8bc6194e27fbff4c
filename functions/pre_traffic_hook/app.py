"""The pre-traffic hook of every `live` alias: CodeDeploy calls it before shifting any traffic to a new
version; it runs the smoke test against the release's new versions (invoked directly, by version ARN) and
reports Succeeded or Failed, and a failure rolls the deployment back before a user reaches it."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from smoke import ROUTES, SmokeTestFailed, lambda_transport, run_smoke_test

# Clients built once per process, at init (the hook runs a few times per deployment).
_lambda = boto3.client("lambda")
_codedeploy = boto3.client("codedeploy")
logger = Logger()


def _targets() -> dict[str, str]:
    """Each smoke-tested route's function, as the version ARN this deployment published (the template
    passes `!Ref <Function>.Version`, which also makes CloudFormation update the hook after them)."""
    functions: dict[str, str] = json.loads(os.environ["SMOKE_ROUTES"])
    return {route: os.environ[f"SMOKE_VERSION_{functions[route]}"] for route in ROUTES}


def _invoke(function: str, payload: bytes) -> tuple[bytes, bool]:
    answer = _lambda.invoke(FunctionName=function, Payload=payload)
    return answer["Payload"].read(), "FunctionError" in answer


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    deployment = event["DeploymentId"]
    # A user of its own per deployment: per-user limits (OPS-4, COST-4) never meet another run's turns.
    user = f"smoke-test-{deployment}"
    status, detail = "Succeeded", ""
    try:
        passed = run_smoke_test(
            lambda_transport(_invoke, _targets(), user), os.environ.get("SMOKE_TEST_MODEL") or None
        )
        detail = ", ".join(passed)
    except SmokeTestFailed as exc:
        status, detail = "Failed", str(exc)
    except Exception as exc:  # unreported, CodeDeploy would wait an hour to fail the deployment
        logger.exception("smoke test could not run")
        status, detail = "Failed", f"{type(exc).__name__}: {exc}"
    logger.info("smoke test", deployment=deployment, status=status, detail=detail)
    _codedeploy.put_lifecycle_event_hook_execution_status(
        deploymentId=deployment,
        lifecycleEventHookExecutionId=event["LifecycleEventHookExecutionId"],
        status=status,
    )
    return {"status": status, "detail": detail}
