import type { Tracer } from '@opentelemetry/api';
import type { TracingConfig } from '../../config.ts';

/**
 * Our own seams into OpenTelemetry (docs/observability.md#traces): spans for jobs, outside calls and
 * PGlite statements, the route template on the HTTP server span, trace ids in log lines. Each is a
 * no-op unless `tracing-sdk.ts` started tracing; this file loads no OpenTelemetry code itself, so a
 * process without tracing pays one `undefined` check per seam.
 */
export interface ActiveTracing {
  api: typeof import('@opentelemetry/api');
  tracer: Tracer;
  /** Names the HTTP server span of the current request after its route template. */
  setHttpRoute(route: string): void;
  /** Ends tracing: the spans still buffered are sent first. */
  shutdown(): Promise<void>;
}

let active: ActiveTracing | undefined;

export function activateTracing(tracing: ActiveTracing): void {
  active = tracing;
}

export function tracingActive(): boolean {
  return active !== undefined;
}

export type SpanAttributes = Record<string, string | number | boolean>;

/** The part of a span the seams use. */
export interface SpanHandle {
  setAttribute(key: string, value: string | number | boolean): void;
}

export interface SpanOptions {
  kind?: 'internal' | 'client' | 'consumer';
  attributes?: SpanAttributes;
  /** Starts a trace of its own (a job: the queue's poll that fetched it is no parent). */
  root?: boolean;
  /** Only inside a trace: statements and calls outside any request or job would each be a lone trace. */
  requireParent?: boolean;
}

/** Runs `fn` in a span (when tracing): ended when `fn` settles, marked failed when it throws. */
export function inSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: SpanHandle | undefined) => Promise<T>,
): Promise<T> {
  const tracing = active;
  if (!tracing) return fn(undefined);
  const { api, tracer } = tracing;
  if (options.requireParent && !api.trace.getSpan(api.context.active())) return fn(undefined);
  const kind =
    options.kind === 'client'
      ? api.SpanKind.CLIENT
      : options.kind === 'consumer'
        ? api.SpanKind.CONSUMER
        : api.SpanKind.INTERNAL;
  return tracer.startActiveSpan(
    name,
    { kind, ...(options.attributes ? { attributes: options.attributes } : {}), root: options.root ?? false },
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({
          code: api.SpanStatusCode.ERROR,
          message: error instanceof Error ? error.message : String(error),
        });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

export function setHttpRoute(route: string): void {
  active?.setHttpRoute(route);
}

/** The current trace and span ids, for log lines; undefined outside a trace or without tracing. */
export function currentTraceIds(): { trace_id: string; span_id: string } | undefined {
  if (!active) return undefined;
  const span = active.api.trace.getSpan(active.api.context.active());
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** Sends what is buffered and stops; nothing to do without tracing. */
export async function shutdownTracing(): Promise<void> {
  const tracing = active;
  active = undefined;
  await tracing?.shutdown();
}

/** Says at start where spans go (server and worker alike), and why the protocol differs if it does. */
export function logTracingTarget(
  log: { info(fields: object, message: string): void; warn(message: string): void },
  tracing: TracingConfig | undefined,
): void {
  if (!tracing) return;
  // The receiver's origin only: a URL may carry credentials.
  log.info(
    { receiver: new URL(tracing.url).origin, service: tracing.serviceName },
    'tracing: spans sent over OTLP/HTTP',
  );
  if (tracing.protocolNote) log.warn(tracing.protocolNote);
}
