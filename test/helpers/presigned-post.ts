/**
 * Real uploads to a presigned POST form over HTTP, as a browser or any S3 client sends them: the app
 * listens on a real port on 127.0.0.1 (PUBLIC_BASE_URL points at it, so the presigned `url` is the
 * service's own `/storage/<bucket>`), and the form is built by the platform's FormData, every field of
 * `presigned_post.fields` in turn, then the file last as `file`.
 */
import crypto from 'node:crypto';
import { createTestApp, type TestApp, type TestAppOptions } from './app.ts';
import { freePort } from './processes.ts';

export interface ListeningTestApp extends TestApp {
  /** `http://127.0.0.1:<port>`. */
  baseUrl: string;
}

export async function listeningTestApp(options: TestAppOptions = {}): Promise<ListeningTestApp> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await createTestApp({ ...options, env: { PUBLIC_BASE_URL: baseUrl, ...options.env } });
  await t.app.listen({ port, host: '127.0.0.1' });
  return Object.assign(t, { baseUrl });
}

export interface PresignedPostForm {
  url: string;
  fields: Record<string, string>;
}

export interface UploadFile {
  content: Buffer;
  filename?: string;
  type?: string;
}

export interface UploadResult {
  status: number;
  body: string;
  headers: Headers;
  /** S3's error document, when the answer is one. */
  error: { code: string; message: string } | null;
}

/** Parses `<Error><Code>…</Code><Message>…</Message>…</Error>`. */
export function parseS3Error(body: string): { code: string; message: string } | null {
  const code = /<Code>([^<]*)<\/Code>/.exec(body)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(body)?.[1];
  if (code === undefined) return null;
  const unescape = (s: string) =>
    s.replace(
      /&(lt|gt|amp|quot|apos);/g,
      (_, e: string) => ({ lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" })[e]!,
    );
  return { code, message: unescape(message ?? '') };
}

/**
 * POSTs the form: `fields` in their order (each one iterated, never hard-coded), then `extra` fields,
 * then the file last under `file`.
 */
export async function uploadWithForm(
  post: PresignedPostForm,
  file: UploadFile | null,
  options: { fields?: Record<string, string>; extra?: [string, string][]; url?: string } = {},
): Promise<UploadResult> {
  const form = new FormData();
  for (const [name, value] of Object.entries(options.fields ?? post.fields)) form.append(name, value);
  for (const [name, value] of options.extra ?? []) form.append(name, value);
  if (file) {
    form.append(
      'file',
      new Blob([new Uint8Array(file.content)], file.type ? { type: file.type } : {}),
      file.filename ?? 'upload.bin',
    );
  }
  const response = await fetch(options.url ?? post.url, { method: 'POST', body: form });
  const body = await response.text();
  return { status: response.status, body, headers: response.headers, error: parseS3Error(body) };
}

/**
 * A POST policy signed by hand with SigV4 (not by the AWS SDK): the embedded endpoint must accept any
 * correctly signed policy, and this lets a test sign what the SDK never would (an expired policy, a
 * success_action_status).
 */
export function signPolicy(
  policy: { expiration: string; conditions: unknown[] },
  credentials: { accessKeyId: string; secretAccessKey: string },
  amzDate: string,
  region = 'us-east-1',
): { policy: string; signature: string } {
  const hmac = (key: crypto.BinaryLike, data: string) =>
    crypto.createHmac('sha256', key).update(data).digest();
  const day = amzDate.slice(0, 8);
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), region), 's3'),
    'aws4_request',
  );
  const encoded = Buffer.from(JSON.stringify(policy)).toString('base64');
  return { policy: encoded, signature: hmac(signingKey, encoded).toString('hex') };
}

/** `20260105T093000Z` for a date. */
export const amzDateOf = (date: Date) =>
  date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
