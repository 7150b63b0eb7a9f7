/**
 * The server's first import (docs/observability.md#traces): with `OTEL_EXPORTER_OTLP_ENDPOINT` set,
 * tracing starts here, before any other module of the server is evaluated, so `http` and `pg` load
 * already instrumented — no `--import` flag needed. Without it nothing of OpenTelemetry is loaded.
 */
import { ConfigError, loadConfig } from '../../config.ts';
import { startTracing } from './tracing-sdk.ts';

let tracing;
try {
  tracing = loadConfig().tracing;
} catch (error) {
  // The server reads the configuration again and reports what is wrong with it, in its own words.
  if (!(error instanceof ConfigError)) throw error;
}
if (tracing) startTracing(tracing);
