import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  approvalLinkKeys,
  readApprovalLink,
  signApprovalLink,
  type ApprovalLinkClaims,
} from './approval-links.ts';

const secret = () => ({ key: crypto.randomBytes(32) });
const NOW = Date.UTC(2031, 4, 6, 12, 0, 0);
const claims = (over: Partial<ApprovalLinkClaims> = {}): ApprovalLinkClaims => ({
  v: 1,
  task_uid: crypto.randomUUID(),
  user_uid: crypto.randomUUID(),
  organization_uid: crypto.randomUUID(),
  exp: NOW / 1000 + 3600,
  jti: crypto.randomUUID(),
  ...over,
});

describe('approval link tokens', () => {
  const current = secret();
  const [key] = approvalLinkKeys([current]);

  it('reads back what it signed', () => {
    const c = claims();
    expect(readApprovalLink(signApprovalLink(c, key!), [key!], NOW)).toEqual({ ok: true, claims: c });
  });

  it('derives a key of its own: the secret key itself does not sign', () => {
    const c = claims();
    expect(key!.equals(current.key)).toBe(false);
    expect(readApprovalLink(signApprovalLink(c, current.key), [key!], NOW)).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });

  it('refuses a changed payload, a changed signature and a foreign key', () => {
    const token = signApprovalLink(claims(), key!);
    const [payload, signature] = token.split('.') as [string, string];
    const other = claims();
    const swapped = Buffer.from(JSON.stringify(other)).toString('base64url');
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    const [foreign] = approvalLinkKeys([secret()]);
    for (const bad of [
      `${swapped}.${signature}`,
      `${payload}.${flipped}`,
      signApprovalLink(other, foreign!),
      `${payload}x.${signature}`,
      payload,
      `${token}.x`,
      '',
      'a'.repeat(5000),
    ]) {
      expect(readApprovalLink(bad, [key!], NOW), bad.slice(0, 40)).toEqual({ ok: false, reason: 'invalid' });
    }
  });

  it('refuses a signed payload of the wrong shape', () => {
    for (const c of [
      { ...claims(), v: 2 },
      { ...claims(), task_uid: 'not-a-uuid' },
      { ...claims(), exp: '1' },
      { ...claims(), jti: undefined },
    ]) {
      const payload = Buffer.from(JSON.stringify(c)).toString('base64url');
      const signature = crypto.createHmac('sha256', key!).update(payload).digest('base64url');
      expect(readApprovalLink(`${payload}.${signature}`, [key!], NOW)).toEqual({
        ok: false,
        reason: 'invalid',
      });
    }
  });

  it('says expired (with the claims) once exp has passed', () => {
    const c = claims({ exp: NOW / 1000 });
    expect(readApprovalLink(signApprovalLink(c, key!), [key!], NOW)).toEqual({
      ok: false,
      reason: 'expired',
      claims: c,
    });
    expect(readApprovalLink(signApprovalLink(c, key!), [key!], NOW - 1000).ok).toBe(true);
  });

  it('verifies with an earlier key after a rotation, and not once that key is gone', () => {
    const rotated = approvalLinkKeys([secret(), current]);
    const token = signApprovalLink(claims(), key!);
    expect(readApprovalLink(token, rotated, NOW).ok).toBe(true);
    expect(readApprovalLink(token, rotated.slice(0, 1), NOW).ok).toBe(false);
  });
});
