import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/platform/http/errors.ts';
import {
  assertPublicTarget,
  isPrivateAddress,
  OutboundError,
  parseOutboundUrl,
  sendOutbound,
} from '../../src/platform/http/outbound.ts';

/** A local server whose handler the test swaps; counts what reached it. */
let server: http.Server;
let port: number;
let hits = 0;
let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) =>
  res.end('{"ok":true}');

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits += 1;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
afterEach(() => {
  vi.restoreAllMocks();
  handler = (_req, res) => res.end('{"ok":true}');
});

const send = (url: string, allowPrivate: boolean, timeoutMs = 1000) =>
  sendOutbound(url, { method: 'PUT', headers: {}, body: '{"x":1}', timeoutMs, allowPrivate });

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.0.0.1',
    '10.255.255.255',
    '100.64.0.1',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '192.0.0.8',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1', // how the URL parser prints ::ffff:127.0.0.1
    '::ffff:a9fe:a9fe', // 169.254.169.254
    '::7f00:1', // IPv4-compatible 127.0.0.1
    '64:ff9b::a9fe:a9fe', // NAT64 of the metadata address
    '2002:7f00:1::1', // 6to4 of 127.0.0.1
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '192.0.2.10', // documentation (TEST-NET-1), by ipaddr.js's ranges
    '203.0.113.5', // documentation (TEST-NET-3)
    '2001::1', // Teredo
    '2001:2::1', // benchmarking
    '64:ff9b:1::a', // local-use NAT64
    '100::1', // discard-only
    'localhost',
    'not-an-address',
    '1:2:3:4:5:6:7:8:9',
  ])('%s is private (refused)', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '169.253.255.255',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '2002:808:808::1', // 6to4 of 8.8.8.8
    'fc::1', // 00fc::1, not fc00::/7
  ])('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

describe('parseOutboundUrl and assertPublicTarget', () => {
  it('accepts http and https only, and no credentials in the URL', () => {
    expect(parseOutboundUrl('https://billing.example.com/hook').host).toBe('billing.example.com');
    for (const bad of ['ftp://example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'not a url', '']) {
      const error = (() => {
        try {
          parseOutboundUrl(bad);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).statusCode).toBe(422);
    }
    expect(() => parseOutboundUrl('https://user:pw@example.com/')).toThrow(/credentials/);
  });

  it('refuses private literals, including the forms the URL parser rewrites', async () => {
    for (const url of [
      'http://127.0.0.1/x',
      'http://2130706433/x', // 127.0.0.1 as one number
      'http://0x7f.1/x',
      'http://10.1.2.3/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]:8080/',
      'http://[::ffff:127.0.0.1]/',
      'http://0.0.0.0:3000/',
    ]) {
      const error = await rejection(assertPublicTarget(url, false));
      expect(error, url).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('validation_failed');
      expect((error as AppError).errors?.[0]?.field).toBe('url');
    }
    await expect(assertPublicTarget('https://93.184.216.34/hook', false)).resolves.toBeInstanceOf(URL);
    await expect(assertPublicTarget('http://127.0.0.1/x', true)).resolves.toBeInstanceOf(URL);
  });

  it('resolves host names: one private answer among several refuses the name', async () => {
    vi.spyOn(dns.promises, 'lookup').mockImplementation((async (host: string) => {
      if (host === 'mixed.example') {
        return [
          { address: '93.184.216.34', family: 4 },
          { address: '10.0.0.7', family: 4 },
        ];
      }
      if (host === 'public.example') return [{ address: '93.184.216.34', family: 4 }];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    }) as unknown as typeof dns.promises.lookup);
    const mixed = await rejection(assertPublicTarget('https://mixed.example/', false));
    expect((mixed as AppError).code).toBe('validation_failed');
    await expect(assertPublicTarget('https://public.example/', false)).resolves.toBeInstanceOf(URL);
    // A name that does not resolve is the caller's mistake (422), not a server error.
    const missing = await rejection(assertPublicTarget('https://nowhere.invalid/', false));
    expect(missing).toBeInstanceOf(AppError);
    expect((missing as AppError).statusCode).toBe(422);
  });

  it('localhost (a name, not a literal) is refused', async () => {
    const error = await rejection(assertPublicTarget('http://localhost:3000/', false));
    expect((error as AppError).code).toBe('validation_failed');
  });
});

describe('sendOutbound', () => {
  it('sends the request and returns status and body', async () => {
    let seen: { method?: string; body?: string; length?: string } = {};
    handler = (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen = { method: req.method!, body, length: req.headers['content-length']! };
        res.writeHead(201).end('{"reference":"r1"}');
      });
    };
    const response = await send(`http://127.0.0.1:${port}/hook`, true);
    expect(response).toEqual({ status: 201, body: '{"reference":"r1"}' });
    expect(seen).toEqual({ method: 'PUT', body: '{"x":1}', length: '7' });
  });

  it('connects to a host name (Node asks the lookup for every address)', async () => {
    // Regression: the custom lookup answered one address when Node 20 asked for all of them, so
    // every endpoint given by name failed with "Invalid IP address: undefined".
    await expect(send(`http://localhost:${port}/hook`, true)).resolves.toMatchObject({ status: 200 });
  });

  it('refuses a private literal at call time without connecting', async () => {
    const before = hits;
    for (const url of [`http://127.0.0.1:${port}/`, `http://[::1]:${port}/`, 'http://169.254.169.254/']) {
      const error = await rejection(send(url, false));
      expect(error).toBeInstanceOf(OutboundError);
      expect((error as OutboundError).kind).toBe('blocked');
    }
    expect(hits).toBe(before);
  });

  it('refuses a name that resolves to a private address at call time (DNS rebinding)', async () => {
    // Configured while the name answered a public address; now it answers loopback.
    vi.spyOn(dns.promises, 'lookup').mockResolvedValue([{ address: '93.184.216.34', family: 4 }] as never);
    await expect(assertPublicTarget(`http://rebind.example:${port}/`, false)).resolves.toBeInstanceOf(URL);
    const realLookup = dns.lookup;
    vi.spyOn(dns, 'lookup').mockImplementation(((
      _host: string,
      options: dns.LookupOptions,
      callback: (...args: unknown[]) => void,
    ) => realLookup('127.0.0.1', options, callback as never)) as unknown as typeof dns.lookup);
    const before = hits;
    const error = await rejection(send(`http://rebind.example:${port}/`, false));
    expect(error).toBeInstanceOf(OutboundError);
    expect((error as OutboundError).kind).toBe('blocked');
    expect(hits).toBe(before);
    // The same name with private targets allowed connects to the address the lookup gave.
    await expect(send(`http://rebind.example:${port}/`, true)).resolves.toMatchObject({ status: 200 });
    expect(hits).toBe(before + 1);
  });

  it('times out a server that never answers, within about the timeout', async () => {
    handler = () => undefined;
    const started = Date.now();
    const error = await rejection(send(`http://127.0.0.1:${port}/`, true, 300));
    const elapsed = Date.now() - started;
    expect((error as OutboundError).kind).toBe('timeout');
    // Never early; the upper bound only tells it from no timeout at all (a hang), loosely, so a busy
    // machine cannot fail it.
    expect(elapsed).toBeGreaterThanOrEqual(280);
    expect(elapsed).toBeLessThan(10_000);
  });

  it('bounds the whole exchange: a body that trickles forever times out too', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(timer));
    };
    const started = Date.now();
    const error = await rejection(send(`http://127.0.0.1:${port}/`, true, 400));
    expect((error as OutboundError).kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('reports a refused connection as a network error', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await rejection(send(`http://127.0.0.1:${deadPort}/`, true));
    expect((error as OutboundError).kind).toBe('network');
  });
});
