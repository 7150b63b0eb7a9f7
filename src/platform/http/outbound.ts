import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { AppError } from './errors.ts';

/**
 * Outbound calls to addresses an organization configured (its billing endpoint) must never reach the
 * service's own network: loopback, private, link-local (cloud metadata) and other special ranges are
 * refused at configuration and again at call time on the address actually connected to, so a DNS answer
 * that changes between the two (rebinding) does not get through.
 */
const BLOCKED_V4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => (acc << 8) + Number(part), 0) >>> 0;
}

export function isPrivateAddress(address: string): boolean {
  if (net.isIPv4(address)) {
    const value = v4ToInt(address);
    return BLOCKED_V4.some(([base, bits]) => {
      const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
      return (value & mask) === (v4ToInt(base) & mask);
    });
  }
  if (net.isIPv6(address)) {
    const a = address.toLowerCase();
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
    if (mapped) return isPrivateAddress(mapped[1]!);
    return a === '::' || a === '::1' || /^f[cd]/.test(a) || /^fe[89ab]/.test(a) || a.startsWith('ff');
  }
  return true;
}

export function parseOutboundUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError('validation_failed', 'url is not a valid URL', [
      { field: 'url', message: 'must be an http(s) URL' },
    ]);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new AppError('validation_failed', 'url must use http or https', [
      { field: 'url', message: 'must be an http(s) URL' },
    ]);
  }
  if (url.username || url.password) {
    throw new AppError('validation_failed', 'url must not carry credentials', [
      { field: 'url', message: 'no user:password@' },
    ]);
  }
  return url;
}

/** Resolves the host now and refuses it when any address is private (configuration-time check). */
export async function assertPublicTarget(raw: string, allowPrivate: boolean): Promise<URL> {
  const url = parseOutboundUrl(raw);
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = net.isIP(host)
    ? [host]
    : (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) {
    throw new AppError('validation_failed', 'url points at a private or local network address', [
      { field: 'url', message: 'loopback, private, link-local and metadata addresses are not allowed' },
    ]);
  }
  return url;
}

export class OutboundError extends Error {
  constructor(
    message: string,
    readonly kind: 'timeout' | 'network' | 'blocked',
  ) {
    super(message);
  }
}

export interface OutboundResponse {
  status: number;
  body: string;
}

/** One HTTP request with a hard timeout; the connection's resolved address is checked before use. */
export function sendOutbound(
  rawUrl: string,
  options: {
    method: string;
    headers: Record<string, string>;
    body: string;
    timeoutMs: number;
    allowPrivate: boolean;
  },
): Promise<OutboundResponse> {
  const url = parseOutboundUrl(rawUrl);
  const lookup: net.LookupFunction = (hostname, lookupOptions, callback) => {
    dns.lookup(hostname, { ...lookupOptions, all: false }, (error, address, family) => {
      if (error) return callback(error, address, family);
      if (!options.allowPrivate && isPrivateAddress(address)) {
        return callback(
          new OutboundError(`refused: ${hostname} resolves to a private address`, 'blocked'),
          address,
          family,
        );
      }
      callback(null, address, family);
    });
  };
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(literal) && !options.allowPrivate && isPrivateAddress(literal)) {
    return Promise.reject(new OutboundError(`refused: ${literal} is a private address`, 'blocked'));
  }
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: options.method,
        headers: { ...options.headers, 'content-length': Buffer.byteLength(options.body).toString() },
        lookup,
        timeout: options.timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= 1024 * 1024) chunks.push(chunk);
        });
        response.on('end', () => {
          clearTimeout(deadline);
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
        response.on('error', (error) => reject(new OutboundError(error.message, 'network')));
      },
    );
    // The whole exchange, not just idle time, is bounded.
    const deadline = setTimeout(
      () => request.destroy(new OutboundError('timed out', 'timeout')),
      options.timeoutMs,
    );
    request.on('timeout', () => request.destroy(new OutboundError('timed out', 'timeout')));
    request.on('error', (error) => {
      clearTimeout(deadline);
      reject(error instanceof OutboundError ? error : new OutboundError(error.message, 'network'));
    });
    request.end(options.body);
  });
}
