import { createRequire } from 'node:module';
import type { TracingConfig } from '../../config.ts';
import { redactUrl } from '../logging.ts';
import { activateTracing, tracingActive } from './tracing.ts';

type Api = typeof import('@opentelemetry/api');
type Core = typeof import('@opentelemetry/core');
type SdkTraceNode = typeof import('@opentelemetry/sdk-trace-node');
type Exporter = typeof import('@opentelemetry/exporter-trace-otlp-http');
type Resources = typeof import('@opentelemetry/resources');
type Instrumentation = typeof import('@opentelemetry/instrumentation');
type HttpInstrumentationModule = typeof import('@opentelemetry/instrumentation-http');
type PgInstrumentationModule = typeof import('@opentelemetry/instrumentation-pg');
type UndiciInstrumentationModule = typeof import('@opentelemetry/instrumentation-undici');

/** Requests the SDK does not trace: scrapes and probes, every few seconds, would bury the real traffic. */
const UNTRACED_PATHS = new Set(['/metrics', '/healthz', '/readyz']);

/**
 * Starts OpenTelemetry: spans batched and posted as OTLP/HTTP JSON to `config.url`, W3C trace context
 * read from and sent with HTTP calls, and the library instrumentations for the HTTP server and client
 * (`node:http`: incoming requests, the billing partner, S3), `fetch` (Slack, the LLM) and `pg`.
 *
 * Synchronous on purpose, and loaded with `require`: those instrumentations patch `http` and `pg` as
 * they are first loaded, so this must finish before the server's own imports are evaluated
 * (`tracing-preload.ts`, the server's first import). An `await` here would let ES module evaluation
 * carry on with the sibling imports — `pg` included — before the hooks are in place.
 */
export function startTracing(config: TracingConfig): void {
  if (tracingActive()) return;
  const load = createRequire(import.meta.url);
  const api = load('@opentelemetry/api') as Api;
  const core = load('@opentelemetry/core') as Core;
  const { NodeTracerProvider, BatchSpanProcessor } = load('@opentelemetry/sdk-trace-node') as SdkTraceNode;
  const { OTLPTraceExporter } = load('@opentelemetry/exporter-trace-otlp-http') as Exporter;
  const { resourceFromAttributes } = load('@opentelemetry/resources') as Resources;
  const { registerInstrumentations } = load('@opentelemetry/instrumentation') as Instrumentation;
  const { HttpInstrumentation } = load('@opentelemetry/instrumentation-http') as HttpInstrumentationModule;
  const { PgInstrumentation } = load('@opentelemetry/instrumentation-pg') as PgInstrumentationModule;
  const { UndiciInstrumentation } = load(
    '@opentelemetry/instrumentation-undici',
  ) as UndiciInstrumentationModule;

  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: config.url, headers: config.headers })),
    ],
  });
  // The global provider, an AsyncLocalStorage context manager and the W3C propagator.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0]!),
        // A presigned download carries its signature in the query string: the server span's URL
        // attributes are written again without it, as the logs are (docs/security.md#logs).
        requestHook: (span, request) => {
          if (typeof (request as { getHeader?: unknown }).getHeader === 'function') return; // outgoing
          const url = (request as { url?: string }).url ?? '/';
          const query = url.indexOf('?');
          if (query === -1) return;
          const target = redactUrl(url);
          const host = (request as { headers: Record<string, unknown> }).headers.host;
          const scheme = (request as { socket?: { encrypted?: boolean } }).socket?.encrypted
            ? 'https'
            : 'http';
          span.setAttribute('http.target', target);
          span.setAttribute('http.url', `${scheme}://${String(host ?? 'localhost')}${target}`);
          span.setAttribute('url.query', target.slice(query + 1));
        },
        // An outside call with no request or job around it would be a trace of one span.
        requireParentforOutgoingSpans: true,
      }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
      // Statement text only (our statements are parameterised), never the values; no trace per
      // queue poll or pool connect outside a request or job.
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    ],
  });

  activateTracing({
    api,
    tracer: api.trace.getTracer('remit'),
    setHttpRoute(route) {
      // The HTTP instrumentation names its server span `<method> <route>` from this when it ends.
      const metadata = core.getRPCMetadata(api.context.active());
      if (metadata?.type === core.RPCType.HTTP) metadata.route = route;
    },
    shutdown: () => provider.shutdown(),
  });
}
