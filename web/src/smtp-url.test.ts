import { describe, expect, it } from 'vitest';
import { buildSmtpUrl, maskSmtpPassword, rawSmtpUrlProblem, type SmtpFields } from './smtp-url.ts';

const fields = (more: Partial<SmtpFields> = {}): SmtpFields => ({
  host: 'smtp.example.com',
  port: '',
  security: 'starttls',
  user: '',
  password: '',
  ...more,
});

describe('buildSmtpUrl', () => {
  it('smtp:// with STARTTLS on 587 by default, smtps:// on 465', () => {
    expect(buildSmtpUrl(fields())).toEqual({ ok: true, url: 'smtp://smtp.example.com:587' });
    expect(buildSmtpUrl(fields({ security: 'tls' }))).toEqual({
      ok: true,
      url: 'smtps://smtp.example.com:465',
    });
    expect(buildSmtpUrl(fields({ port: ' 2525 ' }))).toEqual({
      ok: true,
      url: 'smtp://smtp.example.com:2525',
    });
  });

  it('URL-encodes the user and the password (an @, a colon, a slash, spaces, non-ASCII)', () => {
    const built = buildSmtpUrl(fields({ user: 'ar@acme.test', password: 'p@ss:w/rd ü%' }));
    expect(built).toEqual({
      ok: true,
      url: 'smtp://ar%40acme.test:p%40ss%3Aw%2Frd%20%C3%BC%25@smtp.example.com:587',
    });
    // What the service reads back from it (decodeURIComponent of URL's username and password).
    const url = new URL((built as { url: string }).url);
    expect(decodeURIComponent(url.username)).toBe('ar@acme.test');
    expect(decodeURIComponent(url.password)).toBe('p@ss:w/rd ü%');
    expect(url.hostname).toBe('smtp.example.com');
    expect(buildSmtpUrl(fields({ user: 'bot' }))).toEqual({
      ok: true,
      url: 'smtp://bot@smtp.example.com:587',
    });
  });

  it('IP addresses: IPv4 as it is, IPv6 in brackets', () => {
    expect(buildSmtpUrl(fields({ host: '93.184.216.34' }))).toEqual({
      ok: true,
      url: 'smtp://93.184.216.34:587',
    });
    expect(buildSmtpUrl(fields({ host: '2001:db8::25' }))).toEqual({
      ok: true,
      url: 'smtp://[2001:db8::25]:587',
    });
    expect(buildSmtpUrl(fields({ host: '[2001:db8::25]' }))).toEqual({
      ok: true,
      url: 'smtp://[2001:db8::25]:587',
    });
  });

  it('names the field at fault: no host, a URL or path as host, a bad port, a password without user', () => {
    expect(buildSmtpUrl(fields({ host: ' ' }))).toMatchObject({ ok: false, field: 'host' });
    for (const host of [
      'smtp://smtp.example.com',
      'smtp.example.com:587',
      'smtp.example.com/x',
      'a b',
      'a..b',
    ])
      expect(buildSmtpUrl(fields({ host })), host).toMatchObject({ ok: false, field: 'host' });
    for (const port of ['0', '65536', '58 7', 'abc', '-1', '1.5'])
      expect(buildSmtpUrl(fields({ port })), port).toMatchObject({ ok: false, field: 'port' });
    expect(buildSmtpUrl(fields({ password: 'secret' }))).toMatchObject({ ok: false, field: 'user' });
  });
});

describe('maskSmtpPassword', () => {
  it('hides the password, keeps the rest', () => {
    expect(maskSmtpPassword('smtps://ar%40acme.test:s3cr%40t@smtp.example.com:465')).toBe(
      'smtps://ar%40acme.test:••••@smtp.example.com:465',
    );
    expect(maskSmtpPassword('smtp://bot@smtp.example.com:587')).toBe('smtp://bot@smtp.example.com:587');
    expect(maskSmtpPassword('smtp://smtp.example.com:587')).toBe('smtp://smtp.example.com:587');
  });
});

describe('rawSmtpUrlProblem', () => {
  it('accepts what the API takes; says what it would refuse', () => {
    expect(rawSmtpUrlProblem('smtp://u:p@smtp.example.com:587')).toBeUndefined();
    expect(rawSmtpUrlProblem(' smtps://smtp.example.com ')).toBeUndefined();
    expect(rawSmtpUrlProblem('')).toMatch(/Enter the SMTP URL/);
    expect(rawSmtpUrlProblem('smtp.example.com')).toMatch(/not a URL/);
    expect(rawSmtpUrlProblem('https://smtp.example.com')).toMatch(/smtp:\/\//);
    expect(rawSmtpUrlProblem('smtp://smtp.example.com:587/path')).toMatch(/no path/);
    expect(rawSmtpUrlProblem('smtp://smtp.example.com:587?tls=off')).toMatch(/no path/);
  });
});
