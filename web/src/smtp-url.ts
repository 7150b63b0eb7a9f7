/**
 * The SMTP URL of an email account (docs/email-sending.md#email-accounts), built from the fields a
 * person fills in: `smtp://user:password@host:port` (STARTTLS when the server offers it) or `smtps://…`
 * (TLS from the start). User and password are URL-encoded, as the API requires (`%40` for `@`). The
 * API has the last word (it also refuses private hosts); these rules only catch what it would refuse
 * for sure, with the field to point at.
 */

export type SmtpSecurity = 'starttls' | 'tls';

export interface SmtpFields {
  host: string;
  /** As typed; empty means the default port of the security chosen. */
  port: string;
  security: SmtpSecurity;
  user: string;
  password: string;
}

export const DEFAULT_PORTS: Record<SmtpSecurity, number> = { starttls: 587, tls: 465 };

export type SmtpUrlResult =
  { ok: true; url: string } | { ok: false; field: 'host' | 'port' | 'user' | 'password'; message: string };

/** A host name or an IP address (IPv6 in brackets or bare): nothing a URL would read as more. */
const HOST = /^(\[[0-9a-fA-F:.]+\]|[0-9a-fA-F:]*:[0-9a-fA-F:.]+|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/;

export function buildSmtpUrl(fields: SmtpFields): SmtpUrlResult {
  const host = fields.host.trim();
  if (!host) return { ok: false, field: 'host', message: 'Enter the SMTP server’s host name.' };
  if (!HOST.test(host) || host.includes('..')) {
    return {
      ok: false,
      field: 'host',
      message: 'Enter only the host name, such as smtp.example.com (no smtp://, port or path).',
    };
  }
  const portText = fields.port.trim();
  let port = DEFAULT_PORTS[fields.security];
  if (portText) {
    if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      return { ok: false, field: 'port', message: 'The port is a number from 1 to 65535.' };
    }
    port = Number(portText);
  }
  if (!fields.user && fields.password) {
    return { ok: false, field: 'user', message: 'A password needs a username.' };
  }
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const credentials = fields.user
    ? `${encodeURIComponent(fields.user)}${fields.password ? `:${encodeURIComponent(fields.password)}` : ''}@`
    : '';
  const scheme = fields.security === 'tls' ? 'smtps' : 'smtp';
  return { ok: true, url: `${scheme}://${credentials}${bracketed}:${port}` };
}

/** The URL with its password replaced by `••••`, to show what will be sent without showing the secret. */
export function maskSmtpPassword(url: string): string {
  return url.replace(/^(smtps?:\/\/[^:@/]*:)[^@/]*@/i, '$1••••@');
}

/**
 * What the API would refuse in a URL typed whole, said before it is sent: the scheme, a path or query.
 * Undefined when it looks acceptable (the API still checks it, and the host).
 */
export function rawSmtpUrlProblem(raw: string): string | undefined {
  const text = raw.trim();
  if (!text) return 'Enter the SMTP URL, or choose another way of sending.';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'This is not a URL: it looks like smtp://user:password@smtp.example.com:587.';
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    return 'The URL starts with smtp:// (STARTTLS) or smtps:// (TLS).';
  }
  if (!url.hostname) return 'The URL names no host.';
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) {
    return 'The URL takes only a user, a password, a host and a port: no path or query.';
  }
  return undefined;
}
