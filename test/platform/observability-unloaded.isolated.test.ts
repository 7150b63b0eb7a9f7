import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { createTestApp } from '../helpers/app.ts';

// In a process of its own (*.isolated.test.ts): in a shared test worker another file may already have
// loaded prom-client or OpenTelemetry for its own reasons.
describe('observability off', () => {
  it('without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry code is loaded, nor prom-client without metrics', async () => {
    const loaded = () =>
      Object.keys(createRequire(import.meta.url).cache).filter((file) =>
        /node_modules[\\/](@opentelemetry|prom-client)[\\/]/.test(file),
      );
    await import('../../src/platform/observability/tracing-preload.ts');
    const t = await createTestApp();
    try {
      expect(t.deps.metrics?.enabled).toBe(false);
      expect(loaded()).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
