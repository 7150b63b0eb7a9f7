import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_POST_OBJECT_BYTES, verifyPostForm, type PostVerifyResult } from './post-policy.ts';

const credentials = {
  accessKeyId: 'RMTABCDEFGHIJKLMNOPQ',
  secretAccessKey: 'unit-test-secret-0123456789abcdef',
};
const NOW = new Date('2026-03-01T10:00:00Z');
const DATE = '20260301T095900Z';
const CREDENTIAL = `${credentials.accessKeyId}/20260301/us-east-1/s3/aws4_request`;

const hmac = (key: crypto.BinaryLike, data: string) => crypto.createHmac('sha256', key).update(data).digest();

/** A form whose policy is signed by hand (SigV4: HMAC of the base64 policy with the signing key). */
function form(
  conditions: unknown[],
  fields: Record<string, string>,
  options: { expiration?: string; policyText?: string; secret?: string } = {},
): Map<string, string> {
  const policy =
    options.policyText ??
    JSON.stringify({ expiration: options.expiration ?? '2026-03-01T10:15:00Z', conditions });
  const encoded = Buffer.from(policy).toString('base64');
  const key = hmac(
    hmac(hmac(hmac(`AWS4${options.secret ?? credentials.secretAccessKey}`, '20260301'), 'us-east-1'), 's3'),
    'aws4_request',
  );
  const all = {
    'x-amz-algorithm': 'AWS4-HMAC-SHA256',
    'x-amz-credential': CREDENTIAL,
    'x-amz-date': DATE,
    ...fields,
    policy: encoded,
    'x-amz-signature': hmac(key, encoded).toString('hex'),
  };
  return new Map(Object.entries(all).map(([k, v]) => [k.toLowerCase(), v]));
}

const SIGNING_CONDITIONS = [
  { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' },
  { 'x-amz-credential': CREDENTIAL },
  { 'x-amz-date': DATE },
];

const verify = (fields: Map<string, string>, now = NOW) =>
  verifyPostForm(fields, { credentials, region: 'us-east-1', bucket: 'remit', now });

const refusal = (result: PostVerifyResult) => {
  expect(result.ok).toBe(false);
  return result as Extract<PostVerifyResult, { ok: false }>;
};

describe('verifyPostForm', () => {
  it('accepts a correctly signed form and reports what the file must then satisfy', () => {
    const result = verify(
      form(
        [
          ...SIGNING_CONDITIONS,
          { bucket: 'remit' },
          ['starts-with', '$key', 'org/'],
          ['eq', '$Content-Type', 'image/png'],
          ['content-length-range', 10, 20],
        ],
        { key: 'org/a.png', 'Content-Type': 'image/png' },
      ),
    );
    expect(result).toEqual({
      ok: true,
      key: 'org/a.png',
      contentType: 'image/png',
      minBytes: 10,
      maxBytes: 20,
      successStatus: 204,
      expiresAt: new Date('2026-03-01T10:15:00Z'),
    });
  });

  it("without content-length-range: 0 bytes to S3's 5 GB; without Content-Type: binary/octet-stream", () => {
    const result = verify(form([...SIGNING_CONDITIONS, { key: 'k' }], { key: 'k' }));
    expect(result).toMatchObject({
      ok: true,
      minBytes: 0,
      maxBytes: MAX_POST_OBJECT_BYTES,
      contentType: 'binary/octet-stream',
    });
  });

  it('checks each kind of condition', () => {
    const base = [...SIGNING_CONDITIONS, { key: 'org/a.pdf' }];
    expect(
      refusal(verify(form([...base, ['starts-with', '$key', 'other/']], { key: 'org/a.pdf' }))).message,
    ).toBe('Invalid according to Policy: Policy Condition failed: ["starts-with","$key","other/"]');
    // The bucket condition is checked against the bucket the request is addressed to.
    expect(refusal(verify(form([...base, { bucket: 'elsewhere' }], { key: 'org/a.pdf' }))).code).toBe(
      'AccessDenied',
    );
    // …and against the form's own bucket field when it has one.
    expect(
      refusal(verify(form([...base, { bucket: 'remit' }], { key: 'org/a.pdf', bucket: 'other' }))).code,
    ).toBe('AccessDenied');
    // A condition on a field the form lacks fails (the value is empty)…
    expect(refusal(verify(form([...base, { 'Content-Type': 'a/b' }], { key: 'org/a.pdf' }))).code).toBe(
      'AccessDenied',
    );
    // …but starts-with "" accepts anything, as in S3.
    expect(verify(form([...base, ['starts-with', '$Content-Type', '']], { key: 'org/a.pdf' })).ok).toBe(true);
  });

  it('refuses fields no condition names, except file, policy, x-amz-signature and x-ignore-*', () => {
    const conditions = [...SIGNING_CONDITIONS, { key: 'k' }];
    expect(refusal(verify(form(conditions, { key: 'k', acl: 'public-read' }))).message).toBe(
      'Invalid according to Policy: Extra input fields: acl',
    );
    expect(verify(form(conditions, { key: 'k', 'x-ignore-foo': 'bar' })).ok).toBe(true);
  });

  it("refuses an expired policy with S3's message, and accepts it until the second it expires", () => {
    const fields = form(
      [...SIGNING_CONDITIONS, { key: 'k' }],
      { key: 'k' },
      { expiration: '2026-03-01T10:00:00Z' },
    );
    expect(verify(fields, new Date('2026-03-01T10:00:00Z')).ok).toBe(true);
    expect(refusal(verify(fields, new Date('2026-03-01T10:00:00.001Z')))).toEqual({
      ok: false,
      status: 403,
      code: 'AccessDenied',
      message: 'Invalid according to Policy: Policy expired.',
    });
  });

  it("answers S3's codes for what is missing or malformed", () => {
    const ok = form([...SIGNING_CONDITIONS, { key: 'k' }], { key: 'k' });
    const without = (name: string) => new Map([...ok].filter(([k]) => k !== name));
    const withValue = (name: string, value: string) => new Map([...ok, [name, value]]);
    expect(refusal(verify(without('policy')))).toMatchObject({ status: 403, code: 'AccessDenied' });
    expect(refusal(verify(without('key')))).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(refusal(verify(without('x-amz-signature')))).toMatchObject({
      status: 400,
      code: 'InvalidArgument',
    });
    expect(refusal(verify(withValue('x-amz-algorithm', 'AWS4-HMAC-SHA1')))).toMatchObject({ status: 400 });
    expect(refusal(verify(withValue('x-amz-date', '2026-03-01')))).toMatchObject({ status: 400 });
    expect(refusal(verify(withValue('x-amz-credential', 'a/b')))).toMatchObject({ status: 400 });
    expect(
      refusal(verify(withValue('x-amz-credential', CREDENTIAL.replace('us-east-1', 'eu-west-1')))).message,
    ).toContain('region');
    expect(
      refusal(verify(withValue('x-amz-credential', CREDENTIAL.replace('20260301', '20260302')))).code,
    ).toBe('InvalidArgument');
    expect(refusal(verify(withValue('x-amz-signature', 'A'.repeat(64))))).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect(
      refusal(verify(form([], {}, { secret: 'another-secret-0123456789abcdefgh' }).set('key', 'k'))).code,
    ).toBe('SignatureDoesNotMatch');
  });

  it('refuses a policy that is not JSON, lacks expiration or conditions, or has a condition it cannot read', () => {
    const fields = { key: 'k' };
    for (const policyText of [
      'not json',
      '{"conditions":[]}',
      '{"expiration":"2026-03-01T11:00:00Z"}',
      '{"expiration":"soon","conditions":[]}',
    ]) {
      expect(refusal(verify(form([], fields, { policyText }))), policyText).toMatchObject({
        status: 400,
        code: 'InvalidPolicyDocument',
      });
    }
    for (const bad of [
      ['in', '$key', 'k'],
      ['eq', 'key', 'k'],
      { a: '1', b: '2' },
      ['content-length-range', 5, 1],
      'key',
    ]) {
      expect(
        refusal(verify(form([...SIGNING_CONDITIONS, { key: 'k' }, bad], fields))).code,
        JSON.stringify(bad),
      ).toBe('InvalidPolicyDocument');
    }
  });

  it('refuses a session token (the embedded store issues none) and keys that are not valid keys', () => {
    const token = form([...SIGNING_CONDITIONS, { key: 'k' }, { 'x-amz-security-token': 't' }], {
      key: 'k',
      'x-amz-security-token': 't',
    });
    expect(refusal(verify(token))).toMatchObject({ status: 400, code: 'InvalidToken' });
    expect(
      refusal(verify(form([...SIGNING_CONDITIONS, { key: 'a/../b' }], { key: 'a/../b' }))),
    ).toMatchObject({
      status: 400,
      code: 'InvalidArgument',
    });
  });

  it('honours success_action_status 200 and 201 (else 204), and refuses success_action_redirect', () => {
    const withStatus = (value: string) =>
      verify(
        form([...SIGNING_CONDITIONS, { key: 'k' }, { success_action_status: value }], {
          key: 'k',
          success_action_status: value,
        }),
      );
    expect(withStatus('200')).toMatchObject({ ok: true, successStatus: 200 });
    expect(withStatus('201')).toMatchObject({ ok: true, successStatus: 201 });
    expect(withStatus('302')).toMatchObject({ ok: true, successStatus: 204 });
    const redirect = form(
      [...SIGNING_CONDITIONS, { key: 'k' }, ['starts-with', '$success_action_redirect', '']],
      {
        key: 'k',
        success_action_redirect: 'https://example.com/',
      },
    );
    expect(refusal(verify(redirect))).toMatchObject({ status: 501, code: 'NotImplemented' });
  });
});
