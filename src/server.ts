// `npm start`. With OTEL_EXPORTER_OTLP_ENDPOINT set, tracing must hook `http` and `pg` before they
// load: the preload runs first, and the server is imported only after it (a dynamic import, so that in
// the bundle, too, `pg` is not loaded before the hooks are in place; docs/observability.md#traces).
import './platform/observability/tracing-preload.ts';

await import('./server-main.ts');
