/* eslint-disable @typescript-eslint/no-explicit-any -- test responses are checked field by field */
import { expect } from 'vitest';
import type { App } from '../../src/platform/http/types.ts';

export interface CallOptions {
  key?: string | undefined;
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string | number | boolean>;
}

export interface CallResult<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | number | undefined>;
  raw: string;
}

/** One HTTP call through the real app (app.inject), JSON in and out. */
export async function call<T = any>(
  app: App,
  method: string,
  url: string,
  options: CallOptions = {},
): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let payload: string | undefined;
  if (options.body !== undefined) {
    payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const qs = options.query
    ? `${url.includes('?') ? '&' : '?'}${new URLSearchParams(
        Object.entries(options.query).map(([k, v]) => [k, String(v)]),
      ).toString()}`
    : '';
  const response = await app.inject({
    method: method as 'GET',
    url: url + qs,
    headers,
    ...(payload !== undefined ? { payload } : {}),
  });
  let body: unknown = undefined;
  try {
    body = response.body.length > 0 ? JSON.parse(response.body) : undefined;
  } catch {
    body = response.body;
  }
  return { status: response.statusCode, body: body as T, headers: response.headers, raw: response.body };
}

/** Asserts the one error body of CONTRACT §2 and returns it. */
export function expectErrorBody(result: CallResult, status: number, code?: string) {
  const b = result.body as Record<string, unknown>;
  const problems: string[] = [];
  if (result.status !== status) problems.push(`status ${result.status} != ${status}`);
  if (b?.status !== 'error') problems.push('status field is not "error"');
  if (b?.status_code !== status) problems.push(`status_code ${String(b?.status_code)} != ${status}`);
  if (typeof b?.message !== 'string' || b.message.length === 0) problems.push('no message');
  if (typeof b?.code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(b.code))
    problems.push('code is not snake_case');
  if (code && b?.code !== code) problems.push(`code ${String(b?.code)} != ${code}`);
  // A replayed response (Idempotency-Key) carries the first request's id, named by Original-Request.
  const requestId = result.headers['original-request'] ?? result.headers['x-request-id'];
  if (typeof b?.request_id !== 'string' || b.request_id !== requestId)
    problems.push('request_id is not the X-Request-Id (or Original-Request) header');
  if (JSON.stringify(b ?? {}).match(/\bat .+\.(ts|js):\d+/)) problems.push('stack trace leaked');
  if (problems.length > 0)
    throw new Error(`Unexpected error response (${problems.join(', ')}): ${result.raw}`);
  return b as {
    status: 'error';
    status_code: number;
    message: string;
    code: string;
    request_id: string;
    errors?: { field: string; message: string }[];
  };
}

/** POSTs JSON to a real Remit process with an API key; the answer must be a success (2xx). */
export async function postToProcess(
  baseUrl: string,
  key: string,
  url: string,
  body: unknown,
): Promise<{ data?: { uid: string }; uid?: string }> {
  const res = await fetch(`${baseUrl}${url}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { data?: { uid: string }; uid?: string };
  expect(res.status, JSON.stringify(json)).toBeLessThan(300);
  return json;
}
