"""template.yaml's operations, generated from functions/routes.py and the template's own queues: the alarms
on one SNS topic, the dashboard, the pre-traffic hook and each `live` alias's DeploymentPreference.

Nothing here lists a function, a route, a queue or a stream by name: each alarm and widget is derived from
the route table (functions, their routes and triggers) and from the template's hand-written resources (its
queues, the table, the API), so a new route or queue gets its alarms from `make template`.
docs/operations.md is the runbook of every alarm this writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from functions.routes import FUNCTIONS, Function

#: A metric-math alarm reads at most 10 metrics (a hard CloudWatch limit).
MAX_ALARM_METRICS = 10
TOPIC = "AlarmTopic"
HOOK = "PreTrafficHook"
#: Its code: a function folder of its own that routes.py does not list (it serves no operation of the API).
HOOK_FOLDER = "pre_traffic_hook"
#: The smoke test's routes (functions/pre_traffic_hook/smoke.py ROUTES, kept equal by a test).
SMOKE_ROUTES = (
    "POST /conversations",
    "POST /messages",
    "GET /conversations/{conversation_id}",
    "DELETE /conversations/{conversation_id}",
)
PERIOD = 300


@dataclass(frozen=True)
class Alarm:
    """One AWS::CloudWatch::Alarm: its logical id, what it watches (docs/operations.md has its runbook)."""

    logical_id: str
    description: str
    properties: dict[str, Any]
    #: The functions whose deployments it may roll back (empty: none).
    functions: tuple[str, ...] = ()

    @property
    def metrics(self) -> int:
        """How many metrics it reads (what CloudWatch prices an alarm by)."""
        queries = self.properties.get("Metrics")
        return sum(1 for q in queries if "MetricStat" in q) if queries else 1


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", text) if part)


def route_group(function: Function) -> str:
    """Routes sharing their first path segment (`/worlds/...`, `/v1/...`) form a group; the streaming
    function URL is its own, the queue and stream workers another."""
    if function.http:
        return function.http[0].path.strip("/").split("/")[0]
    return "stream" if function.function_url else "workers"


def route_groups() -> dict[str, list[Function]]:
    groups: dict[str, list[Function]] = {}
    for function in FUNCTIONS:
        groups.setdefault(route_group(function), []).append(function)
    return groups


def _chunks(items: Sequence[Function], size: int) -> Iterator[tuple[int, Sequence[Function]]]:
    count = (len(items) + size - 1) // size
    for index in range(count):
        yield (index + 1 if count > 1 else 0), items[index * size : (index + 1) * size]


def _stat(
    qid: str, namespace: str, name: str, dimensions: dict[str, Any], stat: str = "Sum"
) -> dict[str, Any]:
    return {
        "Id": qid,
        "ReturnData": False,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
            },
            "Period": PERIOD,
            "Stat": stat,
        },
    }


def _expression(qid: str, expression: str, label: str, returned: bool = False) -> dict[str, Any]:
    return {"Id": qid, "Expression": {"Fn::Sub": expression}, "Label": label, "ReturnData": returned}


def _math_alarm(queries: list[dict[str, Any]], threshold: float = 1) -> dict[str, Any]:
    return {
        "Metrics": queries,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "Threshold": threshold,
        "EvaluationPeriods": 1,
        "TreatMissingData": "notBreaching",
    }


def _fn(function: Function) -> dict[str, str]:
    return {"Ref": f"{function.name}Function"}


def function_alarms() -> list[Alarm]:
    """Errors and throttles of every function, five functions (ten metrics) per alarm, by route group."""
    alarms = []
    for group, functions in route_groups().items():
        for index, chunk in _chunks(functions, MAX_ALARM_METRICS // 2):
            queries = []
            for n, function in enumerate(chunk):
                queries.append(_stat(f"e{n}", "AWS/Lambda", "Errors", {"FunctionName": _fn(function)}))
                queries.append(_stat(f"t{n}", "AWS/Lambda", "Throttles", {"FunctionName": _fn(function)}))
            errors = ", ".join(f"e{n}" for n in range(len(chunk)))
            throttles = ", ".join(f"t{n}" for n in range(len(chunk)))
            queries += [
                _expression("errors", f"SUM([{errors}])", "errors"),
                _expression("throttles", f"SUM([{throttles}])", "throttles"),
                _expression(
                    "breach",
                    "IF(errors >= ${FunctionErrorsThreshold}"
                    " OR throttles >= ${FunctionThrottlesThreshold}, 1, 0)",
                    "errors or throttles over their thresholds",
                    returned=True,
                ),
            ]
            names = ", ".join(f.name for f in chunk)
            alarms.append(
                Alarm(
                    f"{_camel(group)}Functions{index or ''}ErrorsAlarm",
                    f"Errors or throttles of the {group} functions ({names}) in 5 minutes.",
                    _math_alarm(queries),
                    tuple(f.name for f in chunk),
                )
            )
    return alarms


def latency_alarms() -> list[Alarm]:
    """p99 duration of each route group's functions that answer without the model (the model's own
    latency has its alarm; the streaming function streams for minutes by design)."""
    alarms = []
    for group, functions in route_groups().items():
        quick = [f for f in functions if f.http and not f.calls_model]
        for index, chunk in _chunks(quick, MAX_ALARM_METRICS):
            queries = [
                _stat(f"d{n}", "AWS/Lambda", "Duration", {"FunctionName": _fn(f)}, "p99")
                for n, f in enumerate(chunk)
            ]
            slowest = ", ".join(f"d{n}" for n in range(len(chunk)))
            queries.append(_expression("slowest", f"MAX([{slowest}])", "slowest p99 (ms)", returned=True))
            alarm = _math_alarm(queries, 0)
            alarm["Threshold"] = {"Ref": "RouteLatencyP99Ms"}
            alarm["EvaluationPeriods"] = 3
            alarm["DatapointsToAlarm"] = 2
            names = ", ".join(f.name for f in chunk)
            alarms.append(
                Alarm(
                    f"{_camel(group)}Routes{index or ''}LatencyAlarm",
                    f"p99 duration of the {group} routes ({names}) over RouteLatencyP99Ms.",
                    alarm,
                )
            )
    return alarms


def api_alarms() -> list[Alarm]:
    """The HTTP API as a whole: its 5xx rate and p99 latency (the stage's free metrics)."""
    api = {"ApiId": {"Ref": "HttpApi"}}
    rate = _math_alarm(
        [
            _stat("errors", "AWS/ApiGateway", "5xx", api),
            _stat("requests", "AWS/ApiGateway", "Count", api),
            _expression(
                "rate",
                "IF(requests >= ${AlarmMinRequests}, 100 * errors / requests, 0)",
                "5xx (% of requests)",
                returned=True,
            ),
        ]
    )
    rate["Threshold"] = {"Ref": "ApiServerErrorRatePercent"}
    latency = {
        "Namespace": "AWS/ApiGateway",
        "MetricName": "Latency",
        "Dimensions": [{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}],
        "ExtendedStatistic": "p99",
        "Period": PERIOD,
        "EvaluationPeriods": 3,
        "DatapointsToAlarm": 2,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "Threshold": {"Ref": "ApiLatencyP99Ms"},
        "TreatMissingData": "notBreaching",
    }
    http = tuple(f.name for f in FUNCTIONS if f.snap_start)
    return [
        Alarm(
            "ApiServerErrorsAlarm", "The HTTP API's 5xx answers over ApiServerErrorRatePercent.", rate, http
        ),
        Alarm("ApiLatencyAlarm", "The HTTP API's p99 latency over ApiLatencyP99Ms.", latency),
    ]


def dead_letter_queues(resources: dict[str, Any]) -> list[str]:
    """Every queue a redrive policy or a stream mapping sends failures to."""
    queues = []
    for resource in resources.values():
        policy = (resource.get("Properties") or {}).get("RedrivePolicy") or {}
        target = policy.get("deadLetterTargetArn")
        if isinstance(target, dict) and "Fn::GetAtt" in target:
            queues.append(str(target["Fn::GetAtt"][0]))
    queues += [f.stream.dead_letter_queue for f in FUNCTIONS if f.stream]
    return sorted(set(queues))


def queues(resources: dict[str, Any]) -> list[str]:
    return sorted(name for name, r in resources.items() if r.get("Type") == "AWS::SQS::Queue")


def queue_alarms(resources: dict[str, Any]) -> list[Alarm]:
    alarms = []
    for queue in dead_letter_queues(resources):
        alarms.append(
            Alarm(
                f"{queue}Alarm",
                f"{queue} holds a message: a batch or message failed for good (docs/operations.md, redrive).",
                {
                    "Namespace": "AWS/SQS",
                    "MetricName": "ApproximateNumberOfMessagesVisible",
                    "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}],
                    "Statistic": "Maximum",
                    "Period": PERIOD,
                    "EvaluationPeriods": 1,
                    "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                    "Threshold": 1,
                    "TreatMissingData": "notBreaching",
                },
            )
        )
    return alarms


def stream_alarms() -> list[Alarm]:
    alarms = []
    for function in FUNCTIONS:
        if function.stream:
            alarms.append(
                Alarm(
                    f"{function.name}IteratorAgeAlarm",
                    f"{function.name} reads the table's stream more than StreamIteratorAgeSeconds behind.",
                    {
                        "Metrics": [
                            _stat(
                                "age", "AWS/Lambda", "IteratorAge", {"FunctionName": _fn(function)}, "Maximum"
                            ),
                            _expression("seconds", "age / 1000", "iterator age (s)", returned=True),
                        ],
                        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                        "Threshold": {"Ref": "StreamIteratorAgeSeconds"},
                        "EvaluationPeriods": 2,
                        "TreatMissingData": "notBreaching",
                    },
                )
            )
    return alarms


def table_operations() -> list[str]:
    """The DynamoDB operations the functions call on the table (their SystemErrors metrics): what the
    grants allow, plus the transactions PynamoDB runs under the item actions."""
    granted = set().union(*(f.granted("dynamodb") for f in FUNCTIONS))
    items = {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "BatchWriteItem"}
    operations = granted & items
    if operations & {"PutItem", "UpdateItem", "DeleteItem"}:
        operations.add("TransactWriteItems")
    if "GetItem" in operations:
        operations.add("TransactGetItems")
    return sorted(operations)


def table_alarms() -> list[Alarm]:
    table = {"TableName": {"Ref": "Table"}}
    index = {"TableName": {"Ref": "Table"}, "GlobalSecondaryIndexName": "gsi1"}
    throttles = [
        _stat("reads", "AWS/DynamoDB", "ReadThrottleEvents", table),
        _stat("writes", "AWS/DynamoDB", "WriteThrottleEvents", table),
        _stat("index_reads", "AWS/DynamoDB", "ReadThrottleEvents", index),
        _stat("index_writes", "AWS/DynamoDB", "WriteThrottleEvents", index),
        _expression("throttles", "reads + writes + index_reads + index_writes", "throttle events", True),
    ]
    throttled = _math_alarm(throttles, 0)
    throttled["Threshold"] = {"Ref": "DynamoDbThrottlesThreshold"}
    alarms = [Alarm("TableThrottlesAlarm", "The table throttled reads or writes.", throttled)]
    operations = table_operations()
    for start in range(0, len(operations), MAX_ALARM_METRICS):
        chunk = operations[start : start + MAX_ALARM_METRICS]
        queries = [
            _stat(f"s{n}", "AWS/DynamoDB", "SystemErrors", {**table, "Operation": op})
            for n, op in enumerate(chunk)
        ]
        ids = ", ".join(f"s{n}" for n in range(len(chunk)))
        queries.append(_expression("errors", f"SUM([{ids}])", "system errors", returned=True))
        suffix = str(start // MAX_ALARM_METRICS + 1) if len(operations) > MAX_ALARM_METRICS else ""
        alarms.append(
            Alarm(
                f"TableSystemErrors{suffix}Alarm",
                f"DynamoDB answered 500 to {', '.join(chunk)}.",
                _math_alarm(queries),
            )
        )
    return alarms


def model_alarms(namespace: str, service: str) -> list[Alarm]:
    """The model's error rate and p99 latency, from the metrics every model call emits (chat_core's
    `ProviderErrors`, `ProviderLatency`: namespace POWERTOOLS_METRICS_NAMESPACE, dimension `service`)."""
    dims = {"service": service}
    rate = _math_alarm(
        [
            _stat("errors", namespace, "ProviderErrors", dims),
            _stat("calls", namespace, "ProviderLatency", dims, "SampleCount"),
            _expression(
                "rate", "IF(calls >= ${AlarmMinRequests}, 100 * errors / calls, 0)", "model errors (%)", True
            ),
        ],
        0,
    )
    rate["Threshold"] = {"Ref": "ModelErrorRatePercent"}
    latency = {
        "Namespace": namespace,
        "MetricName": "ProviderLatency",
        "Dimensions": [{"Name": "service", "Value": service}],
        "ExtendedStatistic": "p99",
        "Period": PERIOD,
        "EvaluationPeriods": 3,
        "DatapointsToAlarm": 2,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "Threshold": {"Ref": "ModelLatencyP99Ms"},
        "TreatMissingData": "notBreaching",
    }
    callers = tuple(f.name for f in FUNCTIONS if f.calls_model and f.snap_start)
    return [
        Alarm("ModelErrorRateAlarm", "Model calls failing over ModelErrorRatePercent.", rate, callers),
        Alarm("ModelLatencyAlarm", "The model's p99 latency over ModelLatencyP99Ms.", latency),
    ]


def alarms(resources: dict[str, Any], namespace: str, service: str) -> list[Alarm]:
    """Every alarm of the stack, in the order the runbook lists them."""
    return [
        *function_alarms(),
        *latency_alarms(),
        *api_alarms(),
        *queue_alarms(resources),
        *stream_alarms(),
        *table_alarms(),
        *model_alarms(namespace, service),
    ]


def rollback_alarms(function: Function, every: Iterable[Alarm]) -> list[str]:
    """The alarms that roll back `function`'s deployment: those naming it."""
    return [alarm.logical_id for alarm in every if function.name in alarm.functions]


# ------------------------------------------------------------------------------------------ rendering


def _yaml(value: Any, indent: int) -> list[str]:
    """`value` as block YAML (intrinsics in their long form, which CloudFormation reads as the tags)."""
    pad = " " * indent
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines += [f"{pad}{key}:", *_yaml(item, indent + 2)]
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return lines
    if isinstance(value, list):
        lines = []
        for item in value:
            inner = _yaml(item, indent + 2)
            if isinstance(item, (dict, list)) and item:
                lines += [f"{pad}- {inner[0].lstrip()}", *inner[1:]]
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return lines
    return [f"{pad}{_scalar(value)}"]


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if value == {} or value == []:
        return json.dumps(value)
    return json.dumps(str(value))


def render_alarm(alarm: Alarm) -> list[str]:
    properties = {
        "AlarmName": {"Fn::Sub": "${AWS::StackName}-" + alarm.logical_id.removesuffix("Alarm")},
        "AlarmDescription": f"{alarm.description} Runbook: docs/operations.md, {alarm.logical_id}.",
        "ActionsEnabled": True,
        "AlarmActions": [{"Ref": TOPIC}],
        "OKActions": [{"Ref": TOPIC}],
        **alarm.properties,
    }
    return [
        f"  {alarm.logical_id}:",
        "    Type: AWS::CloudWatch::Alarm",
        "    Properties:",
        *_yaml(properties, 6),
    ]


def render_topic() -> list[str]:
    return [
        "  # Every alarm notifies this topic; AlarmEmail (empty: nobody) subscribes an address to it.",
        f"  {TOPIC}:",
        "    Type: AWS::SNS::Topic",
        "    Properties:",
        "      KmsMasterKeyId: !If [HasKmsKey, !Ref KmsKeyArn, !Ref AWS::NoValue]",
        f"  {TOPIC}Email:",
        "    Type: AWS::SNS::Subscription",
        "    Condition: HasAlarmEmail",
        "    Properties:",
        f"      TopicArn: !Ref {TOPIC}",
        "      Protocol: email",
        "      Endpoint: !Ref AlarmEmail",
    ]


def smoke_functions() -> dict[str, Function]:
    """The function serving each smoke-tested route."""
    serving = {}
    for route in SMOKE_ROUTES:
        method, path = route.split(" ", 1)
        [function] = [f for f in FUNCTIONS if any(r.method == method and r.path == path for r in f.http)]
        serving[route] = function
    return serving


def render_hook() -> list[str]:
    serving = smoke_functions()
    routes = {route: f.name for route, f in serving.items()}
    functions = sorted({f.name for f in serving.values()})
    return [
        "  # The pre-traffic hook of every live alias: the smoke test (create, post, read, delete)",
        "  # against the new versions, invoked directly, before CodeDeploy shifts any traffic",
        "  # (docs/operations.md). Its name starts with CodeDeployHook_, which the",
        "  # AWSCodeDeployRoleForLambda policy lets CodeDeploy invoke.",
        f"  {HOOK}:",
        "    Type: AWS::Serverless::Function",
        "    Properties:",
        '      FunctionName: !Sub "CodeDeployHook_${AWS::StackName}"',
        f"      CodeUri: functions/{HOOK_FOLDER}/",
        "      Handler: app.lambda_handler",
        "      Description: Pre-traffic hook - the smoke test of a release's new versions",
        "      Timeout: 120",
        f"      LoggingConfig: {{ LogGroup: !Ref {HOOK}Logs }}",
        "      Environment:",
        "        Variables:",
        f"          SMOKE_ROUTES: {json.dumps(json.dumps(routes))}",
        "          SMOKE_TEST_MODEL: !Ref SmokeTestModel",
        *(f"          SMOKE_VERSION_{name}: !Ref {name}Function.Version" for name in functions),
        "      Policies:",
        "        - Statement:",
        "            - Effect: Allow",
        "              Action: [codedeploy:PutLifecycleEventHookExecutionStatus]",
        '              Resource: !Sub "arn:${AWS::Partition}:codedeploy:${AWS::Region}:${AWS::AccountId}'
        ':deploymentgroup:${ServerlessDeploymentApplication}/*"',
        "            - Effect: Allow",
        "              Action: [lambda:InvokeFunction]",
        "              Resource:",
        *(f'                - !Sub "${{{name}Function.Arn}}:*"' for name in functions),
        f"  {HOOK}Logs:",
        "    Type: AWS::Logs::LogGroup",
        "    Properties:",
        "      RetentionInDays: !Ref LogRetentionDays",
        "      KmsKeyId: !If [HasKmsKey, !Ref KmsKeyArn, !Ref AWS::NoValue]",
    ]


def render_deployment_preference(function: Function, every: Sequence[Alarm]) -> list[str]:
    """The gradual shift of `function`'s live alias (DeploymentType), rolled back by its alarms, after the
    smoke test passes."""
    return [
        "      DeploymentPreference:",
        "        Type: !Ref DeploymentType",
        "        Alarms:",
        *(f"          - !Ref {name}" for name in rollback_alarms(function, every)),
        "        Hooks:",
        f"          PreTraffic: !Ref {HOOK}",
    ]


# ------------------------------------------------------------------------------------------ dashboard


def _sub_ref(reference: dict[str, Any]) -> str:
    if "Ref" in reference:
        return "${" + str(reference["Ref"]) + "}"
    name, attribute = reference["Fn::GetAtt"]
    return "${" + f"{name}.{attribute}" + "}"


def _metric(namespace: str, name: str, dims: dict[str, Any], **options: Any) -> list[Any]:
    row: list[Any] = [namespace, name]
    for key, value in dims.items():
        row += [key, _sub_ref(value) if isinstance(value, dict) else value]
    return [*row, options] if options else row


def _widget(title: str, metrics: list[list[Any]], x: int, y: int, **properties: Any) -> dict[str, Any]:
    return {
        "type": "metric",
        "x": x,
        "y": y,
        "width": 12,
        "height": 6,
        "properties": {
            "title": title,
            "region": "${AWS::Region}",
            "metrics": metrics,
            "period": PERIOD,
            "stat": "Sum",
            "view": "timeSeries",
            **properties,
        },
    }


def dashboard(resources: dict[str, Any], namespace: str, service: str) -> dict[str, Any]:
    """Requests, errors and latency by route group, the API, the model (latency, tokens, cost per day),
    stream lag, queue depths and throttles."""
    widgets: list[dict[str, Any]] = []
    api = {"ApiId": {"Ref": "HttpApi"}}
    widgets.append(
        _widget(
            "HTTP API: requests, 4xx, 5xx",
            [_metric("AWS/ApiGateway", m, api) for m in ("Count", "4xx", "5xx")],
            0,
            0,
        )
    )
    widgets.append(
        _widget(
            "HTTP API: latency p50 / p99 (ms)",
            [_metric("AWS/ApiGateway", "Latency", api, stat=s, label=s) for s in ("p50", "p99")],
            12,
            0,
            stat="p99",
        )
    )
    y = 6
    for group, functions in route_groups().items():
        fns = [{"FunctionName": _fn(f)} for f in functions]
        label = [{"label": f.name} for f in functions]
        widgets.append(
            _widget(
                f"{group}: requests and errors by function",
                [
                    *(
                        _metric("AWS/Lambda", "Invocations", d, **lb)
                        for d, lb in zip(fns, label, strict=True)
                    ),
                    *(
                        _metric("AWS/Lambda", "Errors", d, label=f"{lb['label']} errors")
                        for d, lb in zip(fns, label, strict=True)
                    ),
                ],
                0,
                y,
            )
        )
        widgets.append(
            _widget(
                f"{group}: p99 duration by function (ms)",
                [_metric("AWS/Lambda", "Duration", d, **lb) for d, lb in zip(fns, label, strict=True)],
                12,
                y,
                stat="p99",
            )
        )
        y += 6
    dims = {"service": service}
    widgets.append(
        _widget(
            "Model: latency p50 / p99 (ms), errors",
            [
                _metric(namespace, "ProviderLatency", dims, stat="p50", label="p50"),
                _metric(namespace, "ProviderLatency", dims, stat="p99", label="p99"),
                _metric(namespace, "ProviderErrors", dims, stat="Sum", label="errors", yAxis="right"),
            ],
            0,
            y,
        )
    )
    widgets.append(
        _widget(
            "Model: tokens",
            [_metric(namespace, m, dims) for m in ("PromptTokens", "CompletionTokens")],
            12,
            y,
        )
    )
    y += 6
    widgets.append(
        _widget(
            "Model: estimated cost per day (USD, at DashboardInputPrice / DashboardOutputPrice)",
            [
                _metric(namespace, "PromptTokens", dims, id="prompt", visible=False),
                _metric(namespace, "CompletionTokens", dims, id="completion", visible=False),
                [
                    {
                        "expression": "(prompt * ${DashboardInputPrice}"
                        " + completion * ${DashboardOutputPrice}) / 1000000",
                        "label": "USD per day",
                        "id": "cost",
                    }
                ],
            ],
            0,
            y,
            period=86400,
            view="bar",
        )
    )
    streams = [f for f in FUNCTIONS if f.stream]
    widgets.append(
        _widget(
            "Stream lag: iterator age (ms)",
            [_metric("AWS/Lambda", "IteratorAge", {"FunctionName": _fn(f)}, label=f.name) for f in streams],
            12,
            y,
            stat="Maximum",
        )
    )
    y += 6
    widgets.append(
        _widget(
            "Queue depths (messages visible)",
            [
                _metric(
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    {"QueueName": {"Fn::GetAtt": [q, "QueueName"]}},
                    label=q,
                )
                for q in queues(resources)
            ],
            0,
            y,
            stat="Maximum",
        )
    )
    table = {"TableName": {"Ref": "Table"}}
    widgets.append(
        _widget(
            "Throttles: functions, table",
            [
                *(
                    _metric("AWS/Lambda", "Throttles", {"FunctionName": _fn(f)}, label=f.name)
                    for f in FUNCTIONS
                ),
                _metric("AWS/DynamoDB", "ReadThrottleEvents", table, label="table reads"),
                _metric("AWS/DynamoDB", "WriteThrottleEvents", table, label="table writes"),
            ],
            12,
            y,
        )
    )
    return {"widgets": widgets}


def render_dashboard(resources: dict[str, Any], namespace: str, service: str) -> list[str]:
    body = json.dumps(dashboard(resources, namespace, service), separators=(",", ":"))
    return [
        "  # The stack's dashboard (docs/operations.md), generated with the alarms.",
        "  Dashboard:",
        "    Type: AWS::CloudWatch::Dashboard",
        "    Properties:",
        '      DashboardName: !Sub "${AWS::StackName}"',
        f"      DashboardBody: !Sub {json.dumps(body)}",
    ]


def render(resources: dict[str, Any], namespace: str, service: str) -> list[str]:
    """The operations block of the generated region: topic, hook, alarms, dashboard."""
    lines = ["", "  # ---------------------------------------------------------------- operations"]
    lines += render_topic()
    lines += render_hook()
    for alarm in alarms(resources, namespace, service):
        lines += render_alarm(alarm)
    lines += render_dashboard(resources, namespace, service)
    return lines
