import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Metrics } from '../observability/metrics.ts';
import { observeOutbound } from '../observability/outbound-calls.ts';
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

/** The eight 16-bit groups of an IPv6 address (zone id dropped, embedded dotted IPv4 expanded). */
function v6Groups(address: string): number[] | undefined {
  let a = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    if (!net.isIPv4(dotted[1]!)) return undefined;
    const v = v4ToInt(dotted[1]!);
    a = `${a.slice(0, -dotted[1]!.length)}${(v >>> 16).toString(16)}:${(v & 0xffff).toString(16)}`;
  }
  const halves = a.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...Array<string>(Math.max(fill, 0)).fill('0'), ...tail].map((g) =>
    parseInt(g, 16),
  );
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

function embeddedV4(high: number, low: number): string {
  return [high >>> 8, high & 0xff, low >>> 8, low & 0xff].join('.');
}

/**
 * True for every address a configured endpoint must not reach: the IPv4 ranges above, and in IPv6
 * the unspecified and loopback addresses, unique-local (fc00::/7), link-local (fe80::/10), site-local
 * (fec0::/10), multicast, documentation, and any IPv6 form that carries an IPv4 address (mapped
 * `::ffff:a.b.c.d` — which URLs print as `::ffff:7f00:1` —, compatible `::a.b.c.d`, NAT64
 * `64:ff9b::/96`, 6to4 `2002::/16`) whose IPv4 address is itself refused. Anything that is not an IP
 * address is refused too.
 */
export function isPrivateAddress(address: string): boolean {
  if (net.isIPv4(address)) {
    const value = v4ToInt(address);
    return BLOCKED_V4.some(([base, bits]) => {
      const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
      return (value & mask) === (v4ToInt(base) & mask);
    });
  }
  const g = v6Groups(address);
  if (!g || !net.isIPv6(address.replace(/%.*$/, ''))) return true;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroTo(8)) return true; // ::
  if (zeroTo(7) && g7 === 1) return true; // ::1
  if (zeroTo(5) && g5 === 0xffff) return isPrivateAddress(embeddedV4(g6, g7)); // ::ffff:a.b.c.d
  if (zeroTo(6)) return isPrivateAddress(embeddedV4(g6, g7)); // ::a.b.c.d (deprecated)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return isPrivateAddress(embeddedV4(g6, g7)); // NAT64 well-known prefix
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return true; // local-use NAT64
  if (g0 === 0x2002) return isPrivateAddress(embeddedV4(g1, g2)); // 6to4
  if (g0 === 0x2001 && g1 === 0x0db8) return true; // documentation
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return true; // discard-only
  if ((g0 & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80 || (g0 & 0xffc0) === 0xfec0) return true; // link/site-local
  if ((g0 & 0xff00) === 0xff00) return true; // multicast
  return false;
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
