/**
 * The HTTP client of `POST /files/pull` (docs/reference/files-and-sftp.md): fetches an http(s) URL
 * from public addresses only. The address is checked AFTER DNS resolution
 * (a `lookup` that resolves, refuses any blocked answer and hands the socket
 * exactly the address it checked, so a second resolution cannot swap it), an
 * IP literal is checked as written, and every redirect (at most 5, followed
 * by hand) goes through the same checks.
 */
import dns from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import type { LookupFunction } from 'node:net';
import { refusalOf } from './pull-addresses.js';

export const MAX_REDIRECTS = 5;
const HEADERS_TIMEOUT_MS = 30_000;
/** A body that sends nothing for this long is dropped. */
const IDLE_TIMEOUT_MS = 60_000;

/** The URL may not be fetched (an address, a scheme, too many redirects): the caller's 400. */
export class PullRefused extends Error {}
/** The remote end failed (no answer, an error status): the caller's 400 too, with its reason. */
export class PullFailed extends Error {}

/** The URL `text` if it is http(s) with a host; null otherwise. */
export function parsePullUrl(text: string): URL | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return null;
  return url;
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

function assertAddress(host: string, address: string): void {
  const refusal = refusalOf(address);
  if (refusal !== null)
    throw new PullRefused(`${host} is ${address === host ? '' : `${address}, `}${refusal}; it cannot be pulled from.`);
}

/** Resolves `host` and refuses it when any of its addresses is blocked; the addresses otherwise. */
async function resolveChecked(host: string): Promise<dns.LookupAddress[]> {
  if (net.isIP(host)) {
    assertAddress(host, host);
    return [{ address: host, family: net.isIP(host) }];
  }
  let addresses: dns.LookupAddress[];
  try {
    addresses = await dns.promises.lookup(host, { all: true });
  } catch {
    throw new PullFailed(`${host} could not be resolved.`);
  }
  if (addresses.length === 0) throw new PullFailed(`${host} could not be resolved.`);
  for (const { address } of addresses) assertAddress(host, address);
  return addresses;
}

/** Checks the URL's host before anything is fetched, to answer a refusal at once (a background pull checks again). */
export async function assertPullable(url: URL): Promise<void> {
  await resolveChecked(bareHost(url));
}

/** A `lookup` for http.request: resolves, checks, and answers with exactly the address it checked. */
const checkedLookup: LookupFunction = (hostname, options, callback) => {
  resolveChecked(hostname).then(
    (addresses) => {
      const chosen = addresses[0]!;
      if (options.all) (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, [chosen]);
      else callback(null, chosen.address, chosen.family);
    },
    (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
  );
};

function requestOnce(url: URL): Promise<IncomingMessage> {
  const host = bareHost(url);
  if (net.isIP(host)) assertAddress(host, host);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.get(url, {
      lookup: checkedLookup,
      // A connection of its own, closed with the response: the global agent keeps sockets alive
      // (Node 19+), and each pull's idle-timeout listener would stay on a reused one.
      agent: false,
      headers: { 'user-agent': 'Quetzal file pull' },
      timeout: HEADERS_TIMEOUT_MS,
    });
    request.on('response', (response) => {
      response.setTimeout?.(IDLE_TIMEOUT_MS);
      response.socket.setTimeout(IDLE_TIMEOUT_MS, () => response.destroy(new PullFailed('The remote server stopped sending.')));
      resolve(response);
    });
    request.on('timeout', () => request.destroy(new PullFailed('The remote server did not answer in time.')));
    request.on('error', (err) => {
      if (err instanceof PullRefused || err instanceof PullFailed) reject(err);
      else
        reject(new PullFailed(`The remote server could not be reached (${(err as NodeJS.ErrnoException).code ?? err.message}).`));
    });
  });
}

/** The response of `url` once redirects are followed (each one checked); a 2xx, or PullFailed. */
export async function fetchPull(url: URL): Promise<{ response: IncomingMessage; url: URL }> {
  let current = url;
  for (let hop = 0; ; hop++) {
    const response = await requestOnce(current);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status >= 300 && status < 400 && location !== undefined) {
      response.resume();
      if (hop >= MAX_REDIRECTS) throw new PullRefused(`More than ${MAX_REDIRECTS} redirects.`);
      const next = parsePullUrl(new URL(location, current).toString());
      if (!next) throw new PullRefused('A redirect led to a URL that is not http(s).');
      current = next;
      continue;
    }
    if (status < 200 || status >= 300) {
      response.resume();
      throw new PullFailed(`The remote server answered ${status}.`);
    }
    return { response, url: current };
  }
}

/** The file name a pull saves as: `filename`, else Content-Disposition's (use_header), else the URL's last part. */
export function pullFileName(url: URL, response: IncomingMessage, useHeader: boolean): string {
  if (useHeader) {
    const fromHeader = dispositionName(response.headers['content-disposition']);
    if (fromHeader) return fromHeader;
  }
  let pathname = url.pathname;
  try {
    pathname = decodeURIComponent(pathname);
  } catch {
    // A malformed escape: the name as written.
  }
  const last = path.posix.basename(pathname);
  return last === '' || last === '/' ? 'download' : last;
}

function dispositionName(header: string | undefined): string | null {
  if (!header) return null;
  const extended = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
  const plain = /filename\s*=\s*(?:"([^"]*)"|([^;\s]+))/.exec(header);
  let name: string | undefined;
  try {
    name = extended ? decodeURIComponent(extended[1]!.trim()) : (plain?.[1] ?? plain?.[2]);
  } catch {
    name = plain?.[1] ?? plain?.[2];
  }
  if (!name) return null;
  // Only the last part: a header may not choose the folder.
  const base = path.posix.basename(name.replace(/\\/g, '/'));
  return base === '' || base === '.' || base === '..' ? null : base;
}
