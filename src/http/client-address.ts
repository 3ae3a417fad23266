import net from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Who a request comes from (docs/reference/configuration.md's TRUST_PROXY; docs/DECISIONS.md
 * "The client's address"). The socket's peer is the client unless it is one
 * of the configured proxies; then the address that proxy wrote last into
 * `X-Forwarded-For` is, and so on while the hop read is itself a trusted
 * proxy. Every part of the panel reads the result as Fastify's `request.ip`:
 * activity entries, sessions, API keys' allowed IPs, the sign-in throttles.
 */

/** Whether an address (as a socket or a proxy gives it) is one of the trusted proxies. */
export type ProxyTrust = (address: string) => boolean;

/** A TRUST_PROXY entry that is neither an IP address nor a CIDR range: its text, for the configuration error. */
export function invalidProxyEntry(entries: readonly string[]): string | undefined {
  return entries.find((entry) => parseRange(entry) === null);
}

function parseRange(entry: string): { address: string; family: 'ipv4' | 'ipv6'; bits: number | null } | null {
  const [address = '', bits, ...rest] = entry.split('/');
  const version = net.isIP(address);
  if (rest.length > 0 || version === 0) return null;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (bits === undefined) return { address, family, bits: null };
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > (version === 4 ? 32 : 128)) return null;
  return { address, family, bits: Number(bits) };
}

/**
 * An IPv4 client seen through an IPv6 socket (`::ffff:10.0.0.1`, when the
 * panel listens on `::`) is that IPv4 address: a proxy listed as 10.0.0.1 is
 * matched either way.
 */
export function unmapped(address: string): string {
  const lower = address.toLowerCase();
  return lower.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}

/** The trust test for TRUST_PROXY's entries (validated by the configuration): exactly these addresses and ranges. */
export function proxyTrust(entries: readonly string[]): ProxyTrust {
  const list = new net.BlockList();
  for (const entry of entries) {
    const range = parseRange(entry);
    if (!range) throw new Error(`not an IP address or CIDR range: ${entry}`);
    if (range.bits === null) list.addAddress(range.address, range.family);
    else list.addSubnet(range.address, range.bits, range.family);
  }
  return (address) => {
    const plain = unmapped(address);
    const version = net.isIP(plain);
    return version !== 0 && list.check(plain, version === 4 ? 'ipv4' : 'ipv6');
  };
}

/**
 * The `X-Forwarded-For` hops the panel believes, nearest first: read from the
 * right while the address that handed the request over is trusted. A hop that
 * is not an IP address ends the chain there (the proxy that wrote it stays
 * the client), so the client's address is always a real address.
 */
export function believedHops(socketAddress: string, header: string | undefined, trust: ProxyTrust): string[] {
  if (header === undefined) return [];
  const entries = header
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const hops: string[] = [];
  let handedOverBy = socketAddress;
  while (trust(handedOverBy) && entries.length > 0) {
    const next = entries.pop()!;
    if (net.isIP(next) === 0) break;
    hops.push(next);
    handedOverBy = next;
  }
  return hops;
}

/** The client's address: the last believed hop, or the socket's peer. */
export function clientAddress(socketAddress: string, header: string | undefined, trust: ProxyTrust | null): string {
  if (trust === null) return socketAddress;
  return believedHops(socketAddress, header, trust).at(-1) ?? socketAddress;
}

/**
 * Fastify's `trustProxy` for TRUST_PROXY (false when off: `request.ip` is the
 * socket's peer and forwarding headers are never read).
 */
export function fastifyTrustProxy(entries: false | readonly string[]): false | ((address: string, hop: number) => boolean) {
  if (entries === false) return false;
  const trust = proxyTrust(entries);
  return (address) => trust(address);
}

/**
 * Before anything reads the request, `X-Forwarded-For` is cut down to the hops
 * the panel believes (removed when it believes none), so that Fastify's
 * `request.ip`, which walks the header the same way, yields exactly
 * clientAddress() and never a malformed entry; no later code can read a hop
 * an untrusted peer wrote.
 */
export function registerForwardedForCheck(app: FastifyInstance, entries: false | readonly string[]): void {
  const trust = entries === false ? null : proxyTrust(entries);
  app.addHook('onRequest', async (request) => {
    // The raw request's headers: what `request.headers` and Fastify's address resolution both read.
    const headers = request.raw.headers;
    const header = headers['x-forwarded-for'];
    if (header === undefined) return;
    const hops = trust === null ? [] : believedHops(request.raw.socket.remoteAddress ?? '', String(header), trust);
    if (hops.length === 0) delete headers['x-forwarded-for'];
    else headers['x-forwarded-for'] = hops.reverse().join(', ');
  });
}
