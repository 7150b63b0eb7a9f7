import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.ts';
import { failureOutcome } from './metrics.ts';

const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: '/tmp/remit-config-test', ...env });

describe('METRICS_* configuration', () => {
  it('nothing set: nothing collected', () => {
    expect(config({}).metrics).toEqual({
      enabled: false,
      token: undefined,
      port: undefined,
      host: '127.0.0.1',
    });
  });

  it('a token, a port, or both turn metrics on', () => {
    const token = 'a-long-enough-token';
    expect(config({ METRICS_TOKEN: ` ${token} ` }).metrics).toMatchObject({ enabled: true, token });
    expect(config({ METRICS_PORT: '9464' }).metrics).toMatchObject({ enabled: true, port: 9464 });
    expect(config({ METRICS_PORT: '0', METRICS_HOST: '10.0.0.5' }).metrics).toMatchObject({
      enabled: true,
      port: 0,
      host: '10.0.0.5',
    });
  });

  it('refuses a short or spaced token and a bad port', () => {
    expect(() => config({ METRICS_TOKEN: 'short' })).toThrow(ConfigError);
    expect(() => config({ METRICS_TOKEN: 'sixteen chars or more' })).toThrow(/without spaces/);
    expect(() => config({ METRICS_PORT: '70000' })).toThrow(/METRICS_PORT/);
    expect(() => config({ METRICS_PORT: 'abc' })).toThrow(/METRICS_PORT/);
  });
});

describe('OTEL_* configuration', () => {
  it('no endpoint: no tracing', () => {
    expect(config({}).tracing).toBeUndefined();
    expect(config({ OTEL_SERVICE_NAME: 'x' }).tracing).toBeUndefined();
  });

  it('the base endpoint gets /v1/traces; the traces endpoint is used as it is and wins', () => {
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'remit',
      protocolNote: undefined,
    });
    expect(
      config({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp/spans',
        OTEL_SERVICE_NAME: 'remit-eu',
      }).tracing,
    ).toMatchObject({ url: 'https://traces.example.com/otlp/spans', serviceName: 'remit-eu' });
  });

  it('headers as key=value pairs, percent-decoded, traces-specific ones winning', () => {
    const tracing = config({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc, x-team = billing',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=ar',
    }).tracing;
    expect(tracing?.headers).toEqual({ authorization: 'Bearer abc', 'x-team': 'ar' });
    expect(() =>
      config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }),
    ).toThrow(/OTEL_EXPORTER_OTLP_HEADERS/);
  });

  it('http/json is what is sent; http/protobuf is noted, grpc refused; OTEL_SDK_DISABLED turns it off', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(
      config({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).tracing?.protocolNote,
    ).toBeUndefined();
    expect(
      config({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }).tracing?.protocolNote,
    ).toMatch(/JSON/);
    expect(() => config({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/gRPC/);
    expect(() => config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/http/);
    expect(config({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
  });
});

describe('the outcome of a failed outside call', () => {
  it('is timeout for each client’s timeout error, else error', () => {
    expect(failureOutcome(Object.assign(new Error('x'), { kind: 'timeout' }))).toBe('timeout');
    expect(failureOutcome(Object.assign(new Error('x'), { timedOut: true }))).toBe('timeout');
    expect(failureOutcome(Object.assign(new Error('x'), { code: 'ETIMEDOUT' }))).toBe('timeout');
    expect(failureOutcome(new DOMException('signal timed out', 'TimeoutError'))).toBe('timeout');
    class APIConnectionTimeoutError extends Error {}
    expect(failureOutcome(new APIConnectionTimeoutError('Request timed out.'))).toBe('timeout');
    expect(failureOutcome(new Error('refused'))).toBe('error');
    expect(failureOutcome(undefined)).toBe('error');
  });
});
