import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Metrics } from '../observability/metrics.ts';
import { observeOutbound } from '../observability/outbound-calls.ts';
import { AppError } from './errors.ts';

/**
 * Outbound calls to addresses an organization configured (its billing endpoint) must never reach the
 * service's own network: loopback, private, link-local (cloud metadata) and other special ranges are
 * refused at configuration and again at call time on the address actually connected to, so a DNS answer
 * that changes between the two (rebinding) does not get through.
 */
function v4Of(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * IPv4 inside an IPv6 address: mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, and
 * the deprecated compatible form `::a.b.c.d` (which ipaddr.js counts as unicast).
 */
function embeddedV4(v6: ipaddr.IPv6, range: string): ipaddr.IPv4 | undefined {
  const p = v6.parts;
  if (range === 'ipv4Mapped') return v6.toIPv4Address();
  if (range === '6to4') return v4Of(p[1]!, p[2]!);
  const wellKnownNat64 = range === 'rfc6052' && p[0] === 0x64 && p[1] === 0xff9b;
  if ((wellKnownNat64 || p[0] === 0) && p.slice(wellKnownNat64 ? 2 : 0, 6).every((x) => x === 0)) {
    return v4Of(p[6]!, p[7]!);
  }
  return undefined;
}

/**
 * True for every address a configured endpoint must not reach: anything ipaddr.js does not class as
 * global unicast (loopback, private, carrier-grade NAT, link-local, multicast, broadcast, reserved and
 * documentation ranges; in IPv6 also unique-local, site-local, discard, Teredo, the local-use NAT64
 * prefix), and any IPv6 form that carries an IPv4 address whose IPv4 address is itself refused.
 * Anything that is not an IP address is refused too.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/%.*$/, '');
  if (!net.isIP(bare)) return true;
  const parsed = ipaddr.parse(bare);
  const range = parsed.range();
  if (parsed.kind() === 'ipv4') return range !== 'unicast';
  const v4 = embeddedV4(parsed as ipaddr.IPv6, range);
  if (v4) return v4.range() !== 'unicast';
  return range !== 'unicast';
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

/**
 * The host's addresses (an IP literal is its own), or null when it resolves to nothing or to any
 * private address. DNS failures are thrown. Used wherever an organization-configured host is checked.
 */
export async function publicAddressesOf(host: string): Promise<string[] | null> {
  const addresses = net.isIP(host)
    ? [host]
    : (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
  return addresses.length === 0 || addresses.some(isPrivateAddress) ? null : addresses;
}

/** Resolves the host now and refuses it when any address is private (configuration-time check). */
export async function assertPublicTarget(raw: string, allowPrivate: boolean): Promise<URL> {
  const url = parseOutboundUrl(raw);
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[] | null;
  try {
    addresses = await publicAddressesOf(host);
  } catch {
    throw new AppError('validation_failed', `url host "${host}" does not resolve`, [
      { field: 'url', message: 'the host name does not resolve' },
    ]);
  }
  if (!addresses) {
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

/**
 * One HTTP request with a hard timeout; the connection's resolved address is checked before use.
 * Timed as a `partner` call (the billing partner is the one organization-configured endpoint); an
 * answer outside 2xx counts as an error.
 */
export function sendOutbound(
  rawUrl: string,
  options: {
    method: string;
    headers: Record<string, string>;
    body: string;
    timeoutMs: number;
    allowPrivate: boolean;
    metrics?: Metrics | undefined;
  },
): Promise<OutboundResponse> {
  const url = parseOutboundUrl(rawUrl);
  // Node 20 asks for every address (`all: true`, for happy eyeballs) unless a family is pinned; the
  // answer must keep the shape asked for. Any private address in it refuses the whole name.
  const lookup = ((
    hostname: string,
    lookupOptions: dns.LookupOptions,
    callback: (error: Error | null, address: string | dns.LookupAddress[], family?: number) => void,
  ) => {
    dns.lookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      if (
        !options.allowPrivate &&
        (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address)))
      ) {
        return callback(
          new OutboundError(`refused: ${hostname} resolves to a private address`, 'blocked'),
          [],
        );
      }
      if (lookupOptions.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  }) as unknown as net.LookupFunction;
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(literal) && !options.allowPrivate && isPrivateAddress(literal)) {
    return Promise.reject(new OutboundError(`refused: ${literal} is a private address`, 'blocked'));
  }
  const client = url.protocol === 'https:' ? https : http;
  const exchange = () =>
    new Promise<OutboundResponse>((resolve, reject) => {
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
  return observeOutbound(options.metrics, 'partner', options.method, exchange, (response) =>
    response.status >= 200 && response.status < 300 ? 'ok' : 'error',
  );
}
