"""Sends Claude-Code-shaped telemetry through the real OpenTelemetry SDK (OTLP/HTTP, protobuf).

Claude Code exports its events as OTLP log records whose body is `claude_code.<event>` and whose
`event.name` attribute is the short name, with the session in `session.id`. This script does the
same for a scripted session: one `api_request` per line of tokens on stdin
(`input cache_read cache_creation`), flushed after each line, then prints `sent N`.

usage: claude-code-otel.py ENDPOINT INGEST_KEY SWARM AGENT SESSION MODEL < tokens
"""
import sys

from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, LogRecord
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

endpoint, key, swarm, agent, session, model = sys.argv[1:7]
resource = Resource.create(
    {
        "service.name": "claude-code",
        "swarmdeck.swarm.id": swarm,
        "swarmdeck.agent.id": agent,
    }
)
provider = LoggerProvider(resource=resource)
exporter = OTLPLogExporter(endpoint=endpoint + "/v1/logs", headers={"Authorization": "Bearer " + key}, timeout=10)
provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
logger = provider.get_logger("com.anthropic.claude_code.events", "2.0.0")

sent = 0
for line in sys.stdin:
    parts = line.split()
    if len(parts) != 3:
        continue
    fresh, cache_read, cache_creation = (int(part) for part in parts)
    logger.emit(
        LogRecord(
            body="claude_code.api_request",
            resource=resource,
            severity_number=SeverityNumber.INFO,
            attributes={
                "event.name": "api_request",
                "session.id": session,
                "model": model,
                "input_tokens": fresh,
                "output_tokens": 120,
                "cache_read_tokens": cache_read,
                "cache_creation_tokens": cache_creation,
                "cost_usd": 0.01,
                "duration_ms": 900,
            },
        )
    )
    provider.force_flush()
    sent += 1
provider.shutdown()
print("sent", sent)
