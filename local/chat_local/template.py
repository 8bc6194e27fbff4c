"""Reads template.yaml: functions, HTTP routes, stream subscriptions, tables; intrinsics resolved locally."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

LOCAL_ACCOUNT_ID = "123456789012"
LOCAL_STACK_NAME = "chat-local"

_NO_VALUE = object()  # AWS::NoValue: the key or list element disappears


class TemplateError(ValueError):
    """The template cannot be served locally (missing file, unknown handler, bad route)."""


# ---------------------------------------------------------------------------------------------- YAML


#: libyaml's parser where PyYAML was built with it (its wheels are): the same documents, about ten times
#: faster than the pure-Python one, which took most of a local server's start on template.yaml.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """SafeLoader that turns CloudFormation short-form tags (!Ref, !GetAtt, !Sub, ...) into long form."""


def _construct_tag(loader: _CfnLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt" and isinstance(value, str):
            # !GetAtt Table.StreamArn is the short form of ["Table", "StreamArn"]
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if tag_suffix == "Condition":
        return {"Condition": value}
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


def load_yaml(path: Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM template (YAML or JSON) without choking on intrinsic-function tags."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateError(f"cannot read template {path}: {exc.strerror}") from exc
    try:
        data = yaml.load(text, Loader=_CfnLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
        raise TemplateError(f"{path} has no Resources section")
    return data


# ---------------------------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class FunctionSpec:
    """One AWS::Serverless::Function as the local runtime needs it."""

    logical_id: str
    code_uri: Path
    handler: str  # "app.lambda_handler" -> <code_uri>/app.py, attribute lambda_handler
    timeout_s: int
    memory_mb: int
    environment: Mapping[str, str]

    @property
    def module_file(self) -> Path:
        module, _, _func = self.handler.rpartition(".")
        return self.code_uri / (module.replace(".", "/") + ".py")

    @property
    def handler_name(self) -> str:
        return self.handler.rpartition(".")[2]


@dataclass(frozen=True)
class HttpRoute:
    """An HttpApi event: METHOD /path/{param} -> function. Method "ANY" matches every method."""

    method: str
    path: str
    function: FunctionSpec
    pattern: re.Pattern[str] = field(compare=False, repr=False)

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def specificity(self) -> tuple[int, int, int]:
        """Sort key: literal segments beat {param}, which beats {proxy+}; longer paths first."""
        segments = [s for s in self.path.split("/") if s]
        literal = sum(1 for s in segments if not s.startswith("{"))
        greedy = sum(1 for s in segments if s.endswith("+}"))
        return (-literal, greedy, -len(segments))


@dataclass(frozen=True)
class SocketRoute:
    """A route of an AWS::ApiGatewayV2::Api of protocol WEBSOCKET (RSP-12): its key ($connect,
    $disconnect, $default or a value of the route selection expression) -> the function its Lambda proxy
    integration invokes."""

    key: str
    function: FunctionSpec
    selection_expression: str


@dataclass(frozen=True)
class StreamSubscription:
    """A DynamoDB-stream event source mapping of a function (Events: Type: DynamoDB)."""

    name: str
    function: FunctionSpec
    table_logical_id: str
    starting_position: str
    batch_size: int
    filters: tuple[Mapping[str, Any], ...]
    maximum_retry_attempts: int | None
    bisect_on_error: bool
    report_batch_item_failures: bool
    enabled: bool
    on_failure_queue: str | None = None  # logical id of the DestinationConfig.OnFailure SQS queue
    #: TumblingWindowInSeconds: each event then names its shard and carries the window's state.
    tumbling_window_s: int | None = None


@dataclass(frozen=True)
class QueueSpec:
    """An AWS::SQS::Queue: its local name and CreateQueue attributes (redrive resolved to the local DLQ)."""

    logical_id: str
    name: str
    url: str
    arn: str
    attributes: Mapping[str, str]
    visibility_timeout_s: int


@dataclass(frozen=True)
class QueueSubscription:
    """An SQS event source mapping of a function (Events: Type: SQS)."""

    name: str
    function: FunctionSpec
    queue_logical_id: str
    batch_size: int
    filters: tuple[Mapping[str, Any], ...]
    report_batch_item_failures: bool
    enabled: bool


@dataclass(frozen=True)
class TableSpec:
    """An AWS::DynamoDB::Table with its CreateTable arguments (TTL applied separately)."""

    logical_id: str
    name: str
    create_args: Mapping[str, Any]
    ttl_attribute: str | None
    stream_view_type: str | None

    @property
    def key_names(self) -> list[str]:
        return [k["AttributeName"] for k in self.create_args["KeySchema"]]


@dataclass(frozen=True)
class Template:
    """What the local server serves from one template file."""

    path: Path
    functions: Mapping[str, FunctionSpec]
    routes: tuple[HttpRoute, ...]
    streams: tuple[StreamSubscription, ...]
    tables: Mapping[str, TableSpec]
    warnings: tuple[str, ...] = ()
    queues: Mapping[str, QueueSpec] = field(default_factory=dict)
    queue_subscriptions: tuple[QueueSubscription, ...] = ()
    #: AWS::S3::Bucket logical id -> its local name (created in the embedded store)
    buckets: Mapping[str, str] = field(default_factory=dict)
    #: The WebSocket API's routes (one such API per template is served locally).
    socket_routes: tuple[SocketRoute, ...] = ()

    def table_for_env(self) -> TableSpec | None:
        """The table the functions' TABLE_NAME points at (the only table in this project)."""
        return next(iter(self.tables.values()), None)


# ---------------------------------------------------------------------------------------------- intrinsics


@dataclass
class Resolver:
    """Resolves intrinsic functions against local values: parameters, tables, pseudo parameters."""

    parameters: dict[str, Any]
    conditions: Mapping[str, Any]
    refs: dict[str, Any]  # logical id -> Ref value (table name, ...)
    attributes: dict[tuple[str, str], Any]  # (logical id, attribute) -> value
    region: str
    unresolved: list[str] = field(default_factory=list)

    def pseudo(self, name: str) -> Any:
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": LOCAL_ACCOUNT_ID,
            "AWS::StackName": LOCAL_STACK_NAME,
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{LOCAL_ACCOUNT_ID}:stack/chat-local",
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": _NO_VALUE,
        }.get(name)

    def ref(self, name: str) -> Any:
        if name.startswith("AWS::"):
            return self.pseudo(name)
        if name in self.parameters:
            return self.parameters[name]
        if name in self.refs:
            return self.refs[name]
        self.unresolved.append(f"!Ref {name}")
        return None

    def get_att(self, logical_id: str, attribute: str) -> Any:
        value = self.attributes.get((logical_id, attribute))
        if value is None:
            self.unresolved.append(f"!GetAtt {logical_id}.{attribute}")
        return value

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.conditions.get(name, False)))

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            items = [self.resolve(v) for v in value]
            return [v for v in items if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(str(arg))
            if key == "Condition" and isinstance(arg, str):
                return self.condition(arg)
            if key == "Fn::GetAtt":
                parts = arg if isinstance(arg, list) else str(arg).split(".", 1)
                return self.get_att(str(parts[0]), str(parts[1]) if len(parts) > 1 else "")
            if key == "Fn::Sub":
                return self._sub(arg)
            if key == "Fn::If":
                name, when_true, when_false = arg
                return self.resolve(when_true if self.condition(name) else when_false)
            if key == "Fn::Equals":
                left, right = (self.resolve(a) for a in arg)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::And":
                return all(self.resolve(a) for a in arg)
            if key == "Fn::Or":
                return any(self.resolve(a) for a in arg)
            if key == "Fn::Join":
                sep, items = arg
                return str(sep).join(str(i) for i in self.resolve(items))
            if key == "Fn::Split":
                sep, text = arg
                return str(self.resolve(text)).split(str(sep))
            if key == "Fn::Select":
                index, items = arg
                resolved = self.resolve(items)
                return resolved[int(self.resolve(index))]
            if key.startswith("Fn::"):
                self.unresolved.append(key)
                return None
        out = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not _NO_VALUE}

    def _sub(self, arg: Any) -> str:
        if isinstance(arg, list):
            text, variables = str(arg[0]), {k: self.resolve(v) for k, v in arg[1].items()}
        else:
            text, variables = str(arg), {}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"  # ${!Literal} escapes
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return str(self.get_att(logical_id, attribute))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, text)


# ---------------------------------------------------------------------------------------------- parsing


def _path_pattern(path: str) -> re.Pattern[str]:
    """/conversations/{conversation_id} -> a regex with named groups; {proxy+} matches several segments."""
    if not path.startswith("/"):
        raise TemplateError(f"route path {path!r} must start with '/'")
    regex = ""
    for segment in path.strip("/").split("/") if path != "/" else []:
        greedy = re.fullmatch(r"\{([A-Za-z0-9_.-]+)\+\}", segment)
        param = re.fullmatch(r"\{([A-Za-z0-9_.-]+)\}", segment)
        if greedy:
            regex += f"/(?P<{_group(greedy.group(1))}>.+)"
        elif param:
            regex += f"/(?P<{_group(param.group(1))}>[^/]+)"
        else:
            regex += "/" + re.escape(segment)
    return re.compile("^" + (regex or "/") + "/?$")


def _group(name: str) -> str:
    # Regex group names must be identifiers; the original name is recovered from the route path.
    return "p_" + re.sub(r"\W", "_", name)


def path_parameter_names(path: str) -> list[str]:
    return [m.rstrip("+") for m in re.findall(r"\{([^}]+)\}", path)]


def _as_int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _table_spec(logical_id: str, props: Mapping[str, Any], name: str) -> TableSpec:
    args: dict[str, Any] = {
        "TableName": name,
        "AttributeDefinitions": list(props.get("AttributeDefinitions") or []),
        "KeySchema": list(props.get("KeySchema") or []),
    }
    billing = props.get("BillingMode") or "PROVISIONED"
    args["BillingMode"] = billing
    throughput = props.get("ProvisionedThroughput") or {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    if billing == "PROVISIONED":
        args["ProvisionedThroughput"] = throughput
    gsis = []
    for gsi in props.get("GlobalSecondaryIndexes") or []:
        entry = {k: gsi[k] for k in ("IndexName", "KeySchema", "Projection") if k in gsi}
        if billing == "PROVISIONED":
            entry["ProvisionedThroughput"] = gsi.get("ProvisionedThroughput") or throughput
        gsis.append(entry)
    if gsis:
        args["GlobalSecondaryIndexes"] = gsis
    lsis = [
        {k: lsi[k] for k in ("IndexName", "KeySchema", "Projection") if k in lsi}
        for lsi in props.get("LocalSecondaryIndexes") or []
    ]
    if lsis:
        args["LocalSecondaryIndexes"] = lsis
    stream = props.get("StreamSpecification") or {}
    view = stream.get("StreamViewType")
    if view:
        args["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view}
    ttl = props.get("TimeToLiveSpecification") or {}
    ttl_attr = ttl.get("AttributeName") if ttl.get("Enabled", True) else None
    return TableSpec(logical_id, name, args, ttl_attr, view)


def load_template(
    path: Path,
    *,
    region: str,
    table_name: str | None = None,
    parameter_overrides: Mapping[str, str] | None = None,
    queue_endpoint: str = "http://127.0.0.1:5000",
) -> Template:
    """Read a SAM template: HttpApi routes, DynamoDB stream subscriptions and tables, nothing listed by hand.

    `table_name` names the (first) table locally; CloudFormation would generate a name, we pick a fixed one.
    Queue URLs (`!Ref Queue`) point at `queue_endpoint`, the embedded moto server.
    """
    path = path.resolve()
    data = load_yaml(path)
    base = path.parent
    resources: dict[str, Any] = data["Resources"]
    warnings: list[str] = []

    parameters = {
        name: (spec or {}).get("Default", "") for name, spec in (data.get("Parameters") or {}).items()
    }
    parameters.update(parameter_overrides or {})

    refs: dict[str, Any] = {}
    attributes: dict[tuple[str, str], Any] = {}
    raw_tables = {lid: r for lid, r in resources.items() if r.get("Type") == "AWS::DynamoDB::Table"}
    resolver = Resolver(parameters, data.get("Conditions") or {}, refs, attributes, region)
    for index, (logical_id, resource) in enumerate(raw_tables.items()):
        props = resource.get("Properties") or {}
        explicit = resolver.resolve(props.get("TableName")) if props.get("TableName") else None
        if explicit:
            name = str(explicit)
        elif index == 0:
            name = table_name or "chat-history-local"
        else:
            name = f"{table_name or 'chat-history-local'}-{logical_id.lower()}"
        refs[logical_id] = name
        arn = f"arn:aws:dynamodb:{region}:{LOCAL_ACCOUNT_ID}:table/{name}"
        attributes[(logical_id, "Arn")] = arn
        # The embedded store reports the real stream ARN once the table exists (see dynamodb.py).
        attributes[(logical_id, "StreamArn")] = f"{arn}/stream/local"
    tables = {
        lid: _table_spec(lid, resolver.resolve(r.get("Properties") or {}), refs[lid])
        for lid, r in raw_tables.items()
    }
    raw_queues = {lid: r for lid, r in resources.items() if r.get("Type") == "AWS::SQS::Queue"}
    for logical_id, resource in raw_queues.items():
        props = resource.get("Properties") or {}
        explicit = resolver.resolve(props.get("QueueName")) if props.get("QueueName") else None
        name = str(explicit) if explicit else f"{LOCAL_STACK_NAME}-{logical_id}"
        if props.get("FifoQueue") and not name.endswith(".fifo"):
            name += ".fifo"
        refs[logical_id] = f"{queue_endpoint.rstrip('/')}/{LOCAL_ACCOUNT_ID}/{name}"
        attributes[(logical_id, "Arn")] = f"arn:aws:sqs:{region}:{LOCAL_ACCOUNT_ID}:{name}"
        attributes[(logical_id, "QueueName")] = name
        attributes[(logical_id, "QueueUrl")] = refs[logical_id]
    queues = {
        lid: _queue_spec(lid, resolver.resolve(r.get("Properties") or {}), attributes)
        for lid, r in raw_queues.items()
    }
    buckets: dict[str, str] = {}
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::S3::Bucket":
            continue
        props = resource.get("Properties") or {}
        explicit = resolver.resolve(props.get("BucketName")) if props.get("BucketName") else None
        name = str(explicit) if explicit else f"{LOCAL_STACK_NAME}-{logical_id.lower()}"
        buckets[logical_id] = refs[logical_id] = name
        attributes[(logical_id, "Arn")] = f"arn:aws:s3:::{name}"
    for logical_id, resource in resources.items():
        rtype = resource.get("Type", "")
        if logical_id in refs:
            continue
        # Other resources resolve to their logical id: good enough for names in log lines.
        refs[logical_id] = logical_id
        if rtype == "AWS::Serverless::Function":
            attributes[(logical_id, "Arn")] = (
                f"arn:aws:lambda:{region}:{LOCAL_ACCOUNT_ID}:function:{logical_id}"
            )

    globals_fn: dict[str, Any] = (data.get("Globals") or {}).get("Function") or {}
    functions: dict[str, FunctionSpec] = {}
    routes: list[HttpRoute] = []
    streams: list[StreamSubscription] = []
    queue_subscriptions: list[QueueSubscription] = []
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties") or {}
        if "Condition" in resource and not resolver.condition(resource["Condition"]):
            continue
        code_uri = props.get("CodeUri", globals_fn.get("CodeUri"))
        handler = props.get("Handler", globals_fn.get("Handler"))
        if not isinstance(code_uri, str) or not isinstance(handler, str) or "." not in handler:
            warnings.append(f"{logical_id}: no local CodeUri/Handler (image or inline code); not served")
            continue
        if handler.endswith(".sh"):
            # A web app the Lambda Web Adapter starts (the streaming function): the local server streams
            # the same routes through the handlers' streaming entries instead.
            continue
        env_raw = dict(((globals_fn.get("Environment") or {}).get("Variables")) or {})
        env_raw.update(((props.get("Environment") or {}).get("Variables")) or {})
        environment = {}
        for key, raw in env_raw.items():
            value = resolver.resolve(raw)
            if value is _NO_VALUE or value is None:
                continue
            environment[key] = value if isinstance(value, str) else json.dumps(value)
        spec = FunctionSpec(
            logical_id=logical_id,
            code_uri=(base / code_uri).resolve(),
            handler=handler,
            timeout_s=_as_int(resolver.resolve(props.get("Timeout", globals_fn.get("Timeout", 3))), 3),
            memory_mb=_as_int(
                resolver.resolve(props.get("MemorySize", globals_fn.get("MemorySize", 128))), 128
            ),
            environment=environment,
        )
        functions[logical_id] = spec
        for event_name, event in (props.get("Events") or {}).items():
            etype = event.get("Type")
            eprops = event.get("Properties") or {}
            if etype == "HttpApi":
                method = str(eprops.get("Method", "ANY")).upper()
                rpath = str(eprops.get("Path", "/$default"))
                if method in ("X-AMAZON-APIGATEWAY-ANY-METHOD", "*"):
                    method = "ANY"
                routes.append(HttpRoute(method, rpath, spec, _path_pattern(rpath)))
            elif etype == "DynamoDB":
                stream_ref = eprops.get("Stream")
                table_id = _stream_table(stream_ref)
                if table_id not in tables:
                    warnings.append(
                        f"{logical_id}.{event_name}: stream {stream_ref!r} is not a table of this template"
                    )
                    continue
                retry = eprops.get("MaximumRetryAttempts")
                filters = _filters(eprops)
                streams.append(
                    StreamSubscription(
                        name=f"{logical_id}.{event_name}",
                        function=spec,
                        table_logical_id=table_id,
                        starting_position=str(eprops.get("StartingPosition", "LATEST")),
                        batch_size=_as_int(eprops.get("BatchSize"), 100),
                        filters=filters,
                        maximum_retry_attempts=None if retry is None else _as_int(retry, -1),
                        bisect_on_error=bool(eprops.get("BisectBatchOnFunctionError", False)),
                        report_batch_item_failures="ReportBatchItemFailures"
                        in (eprops.get("FunctionResponseTypes") or []),
                        enabled=bool(eprops.get("Enabled", True)),
                        on_failure_queue=_stream_table(
                            ((eprops.get("DestinationConfig") or {}).get("OnFailure") or {}).get(
                                "Destination"
                            )
                        )
                        or None,
                        tumbling_window_s=_as_int(eprops.get("TumblingWindowInSeconds"), 0) or None,
                    )
                )
            elif etype == "SQS":
                queue_id = _stream_table(eprops.get("Queue"))
                if queue_id not in queues:
                    warnings.append(
                        f"{logical_id}.{event_name}: queue {eprops.get('Queue')!r} is not in this template"
                    )
                    continue
                queue_subscriptions.append(
                    QueueSubscription(
                        name=f"{logical_id}.{event_name}",
                        function=spec,
                        queue_logical_id=queue_id,
                        batch_size=_as_int(eprops.get("BatchSize"), 10),
                        filters=_filters(eprops),
                        report_batch_item_failures="ReportBatchItemFailures"
                        in (eprops.get("FunctionResponseTypes") or []),
                        enabled=bool(eprops.get("Enabled", True)),
                    )
                )
            elif etype in ("Api", "Schedule", "ScheduleV2", "EventBridgeRule", "CloudWatchEvent"):
                warnings.append(f"{logical_id}.{event_name}: {etype} events are not emulated locally")

    socket_routes = _socket_routes(resources, functions, warnings)
    if resolver.unresolved:
        warnings.append("unresolved locally (left empty): " + ", ".join(sorted(set(resolver.unresolved))))
    routes.sort(key=lambda r: r.specificity)
    return Template(
        path,
        functions,
        tuple(routes),
        tuple(streams),
        tables,
        tuple(warnings),
        queues,
        tuple(queue_subscriptions),
        buckets,
        socket_routes,
    )


_SUB_REF = re.compile(r"\$\{(\w+)(?:\.Arn)?\}")


def _socket_routes(
    resources: Mapping[str, Any], functions: Mapping[str, FunctionSpec], warnings: list[str]
) -> tuple[SocketRoute, ...]:
    """The routes of the template's WebSocket API, each followed through its integration's URI
    (`!Sub "...functions/${Function.Arn}/invocations"`) to the function."""
    apis = {
        lid: (r.get("Properties") or {})
        for lid, r in resources.items()
        if r.get("Type") == "AWS::ApiGatewayV2::Api"
        and (r.get("Properties") or {}).get("ProtocolType") == "WEBSOCKET"
    }
    routes: list[SocketRoute] = []
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::ApiGatewayV2::Route":
            continue
        props = resource.get("Properties") or {}
        api_ref = props.get("ApiId")
        api = str(api_ref.get("Ref", "")) if isinstance(api_ref, Mapping) else ""
        if api not in apis:
            continue
        target = props.get("Target")
        text = target.get("Fn::Sub") if isinstance(target, Mapping) else target
        found = _SUB_REF.search(str(text or ""))
        integration = resources.get(found.group(1)) if found else None
        uri = ((integration or {}).get("Properties") or {}).get("IntegrationUri")
        uri_text = uri.get("Fn::Sub") if isinstance(uri, Mapping) else uri
        names = [m.group(1) for m in _SUB_REF.finditer(str(uri_text or "")) if m.group(1) in functions]
        if not names:
            warnings.append(f"{logical_id}: its integration invokes no function of this template")
            continue
        expression = str(apis[api].get("RouteSelectionExpression") or "$request.body.action")
        routes.append(SocketRoute(str(props.get("RouteKey")), functions[names[0]], expression))
    return tuple(routes)


def _filters(event_properties: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """FilterCriteria patterns (JSON strings in the template) as objects."""
    patterns = []
    for item in (event_properties.get("FilterCriteria") or {}).get("Filters") or []:
        pattern = item.get("Pattern", {})
        try:
            patterns.append(json.loads(pattern) if isinstance(pattern, str) else dict(pattern))
        except ValueError as exc:
            raise TemplateError(f"FilterCriteria pattern is not JSON: {pattern!r}") from exc
    return tuple(patterns)


def _queue_spec(
    logical_id: str, props: Mapping[str, Any], attributes: Mapping[tuple[str, str], Any]
) -> QueueSpec:
    created: dict[str, str] = {}
    for key in (
        "DelaySeconds",
        "MaximumMessageSize",
        "MessageRetentionPeriod",
        "ReceiveMessageWaitTimeSeconds",
        "VisibilityTimeout",
    ):
        if props.get(key) is not None:
            created[key] = str(props[key])
    if props.get("FifoQueue"):
        created["FifoQueue"] = "true"
        if props.get("ContentBasedDeduplication"):
            created["ContentBasedDeduplication"] = "true"
    redrive = props.get("RedrivePolicy")
    if isinstance(redrive, Mapping) and redrive.get("deadLetterTargetArn"):
        created["RedrivePolicy"] = json.dumps(
            {
                "deadLetterTargetArn": redrive["deadLetterTargetArn"],
                "maxReceiveCount": int(redrive.get("maxReceiveCount", 10)),
            }
        )
    return QueueSpec(
        logical_id=logical_id,
        name=str(attributes[(logical_id, "QueueName")]),
        url=str(attributes[(logical_id, "QueueUrl")]),
        arn=str(attributes[(logical_id, "Arn")]),
        attributes=created,
        visibility_timeout_s=_as_int(props.get("VisibilityTimeout"), 30),
    )


def _stream_table(stream_ref: Any) -> str:
    """The logical id behind `!GetAtt Table.StreamArn` / `!GetAtt Queue.Arn` (or a long-form equivalent)."""
    if isinstance(stream_ref, dict) and "Fn::GetAtt" in stream_ref:
        target = stream_ref["Fn::GetAtt"]
        parts = target if isinstance(target, list) else str(target).split(".", 1)
        return str(parts[0])
    return ""
