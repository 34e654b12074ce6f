import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import ipaddr from 'ipaddr.js';
import { ConfigError } from '../config';

/**
 * The HTTP client of every request Herald makes on a project's behalf: an automation's WEBHOOK step
 * (automations/executions.ts) and the outbound webhooks (webhooks/, delivered by worker/webhookQueue.ts). Their URLs
 * are written by project users, so every call is treated as a request on behalf of an untrusted party: it may only reach public addresses (no SSRF into the network
 * Herald runs in), may not be steered by redirects, and is bounded in time and in how much it reads.
 */

export type WebhookMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface WebhookRequest {
  url: string;
  method?: WebhookMethod;
  headers?: Record<string, string>;
  body?: unknown;
  /** A body already serialised as JSON, sent byte for byte (a signed payload); instead of `body`. */
  rawBody?: string;
}

export interface WebhookResponse {
  status: number;
  /** At most maxResponseBytes of the body, decoded as UTF-8. */
  body: string;
  /** The body was longer than maxResponseBytes and was not read to its end. */
  truncated: boolean;
}

/** Resolves a host name to every address it has, like node:dns lookup with `all: true`. */
export type WebhookLookup = (hostname: string) => Promise<LookupAddress[]>;

export interface WebhookOptions {
  /**
   * Hosts allowed even though they resolve to private/loopback/link-local/etc addresses: exact host names, IP
   * literals, or CIDR ranges ("127.0.0.1", "10.0.0.0/8", "::1", "hooks.internal"). Empty by default.
   */
  allowPrivate: string[];
  /** The whole request, from DNS and connect to the last byte read. */
  timeoutMs: number;
  /** Response body cap: at most this much is read, then the connection is dropped (truncated: true). */
  maxResponseBytes: number;
  /** Custom resolver (tests); defaults to node:dns lookup with all: true. */
  lookup?: WebhookLookup;
}

export class WebhookError extends Error {
  /** True when retrying the same request cannot succeed (bad URL, refused address, 4xx, redirect). */
  readonly permanent: boolean;
  /** The response status, when the server answered. */
  readonly status?: number;

  constructor(message: string, opts: { permanent: boolean; status?: number; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'WebhookError';
    this.permanent = opts.permanent;
    if (opts.status !== undefined) this.status = opts.status;
  }
}

export interface WebhookClient {
  call(req: WebhookRequest): Promise<WebhookResponse>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

export const WEBHOOK_METHODS: readonly WebhookMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const METHODS: ReadonlySet<string> = new Set(WEBHOOK_METHODS);
// Framing and routing are Herald's to set: a caller's Host would target a different virtual host than the one the
// address check approved, and its own length/encoding/connection headers could desynchronise the request.
export const RESERVED_HEADERS: readonly string[] = ['host', 'content-length', 'transfer-encoding', 'connection'];
const RESERVED: ReadonlySet<string> = new Set(RESERVED_HEADERS);
const USER_AGENT = 'Herald-Webhook/1';
const HOST_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/;
// NAT64 (RFC 6052 well-known prefix) carries the IPv4 destination in its last 32 bits: on an IPv6-only host with
// DNS64 every IPv4-only webhook resolves to one, so it is judged by the IPv4 address it stands for.
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
/**
 * IPv4-compatible IPv6 addresses (::a.b.c.d, RFC 4291 §2.5.5.1, deprecated): ipaddr.js calls them unicast, yet a host
 * may route `::127.0.0.1` to its own loopback. No public service uses them: refused whatever IPv4 address they carry.
 */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');

type Address = ipaddr.IPv4 | ipaddr.IPv6;

interface AllowList {
  names: ReadonlySet<string>;
  ranges: readonly [Address, number][];
}

const normaliseHost = (host: string): string => host.toLowerCase().replace(/\.$/, '');

function parseAllowList(entries: readonly string[]): AllowList {
  const names = new Set<string>();
  const ranges: [Address, number][] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    if (ipaddr.IPv4.isValidFourPartDecimal(entry) || ipaddr.IPv6.isValid(entry)) {
      const ip = ipaddr.process(entry);
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
    } else if (entry.includes('/') && ipaddr.isValidCIDR(entry)) {
      const [ip, bits] = ipaddr.parseCIDR(entry);
      // "::ffff:10.0.0.0/104" means 10.0.0.0/8: resolved mapped addresses are unwrapped before matching.
      if (ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress() && bits >= 96) ranges.push([ip.toIPv4Address(), bits - 96]);
      else ranges.push([ip, bits]);
    } else if (HOST_NAME.test(normaliseHost(entry)) && !/(?:^|\.)\d+$/.test(normaliseHost(entry))) {
      // (A name ending in a numeric label is a mistyped IP address: URLs reject such host names.)
      names.add(normaliseHost(entry));
    } else {
      throw new Error(`WEBHOOK_ALLOW_PRIVATE: "${raw}" is neither a host name, an IP address nor a CIDR range`);
    }
  }
  return { names, ranges };
}

/** The IPv4 address a v4-mapped or NAT64 IPv6 address reaches; otherwise the address itself. */
function effectiveAddress(ip: Address): Address {
  if (ip instanceof ipaddr.IPv6) {
    if (ip.isIPv4MappedAddress()) return ip.toIPv4Address();
    if (ip.match(NAT64)) {
      const [hi = 0, lo = 0] = ip.parts.slice(6);
      return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
    }
  }
  return ip;
}

function allowedRange(ip: Address, allow: AllowList): boolean {
  return allow.ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
}

/** Whether an address may not be connected to (private, loopback, link-local, reserved, unclassifiable …). */
function isRefused(address: string, allow: AllowList): boolean {
  let ip: Address;
  try {
    ip = effectiveAddress(ipaddr.parse(address));
  } catch {
    return true;
  }
  // 'unicast' is ipaddr.js's name for "none of the special ranges": every other one (loopback, private, linkLocal,
  // carrierGradeNat, uniqueLocal, multicast, reserved, 6to4, teredo, …) may lead into a private network.
  const range = ip instanceof ipaddr.IPv6 && ip.match(IPV4_COMPATIBLE) && ip.range() === 'unicast' ? 'ipv4Compatible' : ip.range();
  return range !== 'unicast' && !allowedRange(ip, allow);
}

/**
 * The one answer for a refused target, whatever the address and however it was reached. Its message is shown to the
 * project (a delivery's and an endpoint's `lastError`, a WEBHOOK step's error): it names neither the address a name
 * resolved to nor its range, or a project user could map the operator's network name by name ("vm resolves to
 * 127.0.0.1").
 */
export const REFUSED_MESSAGE = 'webhook refused: private address (the operator may allow it with WEBHOOK_ALLOW_PRIVATE)';
const refused = () => new WebhookError(REFUSED_MESSAGE, { permanent: true });

const defaultLookup: WebhookLookup = (hostname) => dns.promises.lookup(hostname, { all: true });

type NodeLookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A lookup for node's http/https request that refuses unless every address the name resolves to may be reached.
 * The check runs on the very addresses the socket then connects to, so a DNS answer that changes between a check
 * and the connection (DNS rebinding) cannot slip past it.
 */
function guardedLookup(resolve: WebhookLookup, allow: AllowList, hostAllowed: boolean) {
  return (hostname: string, options: LookupOptions, callback: NodeLookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const [first] = addresses;
        if (!first) throw Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
        if (!hostAllowed) {
          if (addresses.some(({ address }) => isRefused(address, allow))) throw refused();
        }
        // Node asks for every address when it races IPv4 against IPv6 (autoSelectFamily), otherwise for one.
        if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
    ).catch((err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), ''));
  };
}

const permanent = (message: string, cause?: unknown) => new WebhookError(message, { permanent: true, cause });

function statusError(status: number): WebhookError | undefined {
  if (status >= 200 && status < 300) return undefined;
  if (status >= 300 && status < 400) {
    return new WebhookError(`webhook answered ${status}: redirects are not followed`, { permanent: true, status });
  }
  const transient = status === 408 || status === 429 || (status >= 500 && status < 600);
  return new WebhookError(`webhook answered ${status}`, { permanent: !transient, status });
}

function networkError(host: string, err: Error): WebhookError {
  if (err instanceof WebhookError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  // A name that does not exist will not start existing on a retry; every other failure (refused, reset, timeout,
  // a resolver that did not answer: EAI_AGAIN) may be gone on the next try.
  return new WebhookError(`webhook to ${host} failed: ${code ?? err.message}`, { permanent: code === 'ENOTFOUND', cause: err });
}

function requestHeaders(req: WebhookRequest, hasBody: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'user-agent': USER_AGENT };
  if (hasBody) headers['content-type'] = 'application/json';
  for (const [name, value] of Object.entries(req.headers ?? {})) {
    // Header values are never put into messages: they often carry the receiver's secrets.
    if (/[\r\n]/.test(name) || /[\r\n]/.test(String(value))) throw permanent(`webhook header "${name.replace(/[\r\n]/g, ' ')}" contains CR or LF`);
    const lower = name.toLowerCase();
    if (RESERVED.has(lower)) throw permanent(`webhook header "${name}" may not be set`);
    if (lower === 'content-type' || lower === 'user-agent') delete headers[lower];
    headers[name] = String(value);
  }
  return headers;
}

function resolveOptions(opts: Partial<WebhookOptions>): WebhookOptions {
  const options: WebhookOptions = {
    allowPrivate: opts.allowPrivate ?? [],
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxResponseBytes: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    lookup: opts.lookup,
  };
  if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0) throw new Error('webhook timeoutMs must be a positive integer');
  if (!Number.isInteger(options.maxResponseBytes) || options.maxResponseBytes < 0) {
    throw new Error('webhook maxResponseBytes must be a non-negative integer');
  }
  return options;
}

export function createWebhookClient(opts: Partial<WebhookOptions>): WebhookClient {
  const options = resolveOptions(opts);
  const allow = parseAllowList(options.allowPrivate);
  const lookup = options.lookup ?? defaultLookup;
  const cap = options.maxResponseBytes;

  async function call(req: WebhookRequest): Promise<WebhookResponse> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch (err) {
      throw permanent('webhook URL is not a valid URL', err);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw permanent(`webhook URL scheme ${url.protocol} is not allowed (http or https only)`);
    if (url.username || url.password) throw permanent('webhook URLs may not carry credentials (user:password@); use a header');

    const method = req.method ?? 'POST';
    if (!METHODS.has(method)) throw permanent(`webhook method ${String(method)} is not allowed`);
    let payload: string | undefined;
    if (method === 'GET') {
      if (req.body !== undefined || req.rawBody !== undefined) throw permanent('webhook GET requests carry no body');
    } else if (req.rawBody !== undefined) {
      payload = req.rawBody;
    } else if (req.body !== undefined) {
      try {
        payload = JSON.stringify(req.body);
      } catch (err) {
        throw permanent('webhook body cannot be serialised as JSON', err);
      }
    }
    const headers = requestHeaders(req, payload !== undefined);
    if (method !== 'GET') headers['content-length'] = String(Buffer.byteLength(payload ?? ''));

    // URL.hostname keeps IPv6 brackets and has already normalised IPv4 spellings like 0x7f.1 or 2130706433.
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const hostAllowed = allow.names.has(normaliseHost(host));
    // Node calls no lookup for what net.isIP calls an address, so such a host is judged here.
    if (isIP(host) && !hostAllowed && isRefused(host, allow)) throw refused();

    return new Promise<WebhookResponse>((resolve, reject) => {
      let settled = false;
      let request: http.ClientRequest | undefined;
      let response: http.IncomingMessage | undefined;
      const end = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        // Whatever is left of the exchange is dropped: no unread body, no socket kept open after a verdict.
        response?.destroy();
        request?.destroy();
        return true;
      };
      const fail = (err: WebhookError) => end() && reject(err);
      const succeed = (result: WebhookResponse) => end() && resolve(result);
      const timer = setTimeout(() => {
        fail(new WebhookError(`webhook to ${host} timed out after ${options.timeoutMs} ms`, { permanent: false }));
      }, options.timeoutMs);

      try {
        request = (url.protocol === 'https:' ? https : http).request(url, {
          method,
          headers,
          lookup: guardedLookup(lookup, allow, hostAllowed),
          // No pooled sockets: a kept-alive connection from another caller was never checked by this lookup.
          agent: false,
        });
      } catch (err) {
        // Node's own header validation (invalid characters in a name or value).
        fail(permanent(`webhook request is invalid: ${(err as NodeJS.ErrnoException).code ?? 'bad request'}`, err));
        return;
      }

      request.on('error', (err) => fail(networkError(host, err)));
      request.on('response', (res) => {
        response = res;
        const status = res.statusCode ?? 0;
        const error = statusError(status);
        if (error) {
          fail(error);
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = (truncated: boolean) => {
          const body = Buffer.concat(chunks, size).subarray(0, cap);
          // A cut may split a multi-byte character: StringDecoder.write() leaves the incomplete tail out.
          succeed({ status, body: truncated ? new StringDecoder('utf8').write(body) : body.toString('utf8'), truncated });
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size > cap) finish(true);
        });
        res.on('end', () => finish(false));
        res.on('error', (err) => fail(networkError(host, err)));
      });
      request.end(payload);
    });
  }

  return { call };
}

function intFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `Invalid configuration: ${name} must be an integer from ${min} to ${max}; got ${JSON.stringify(env[name])}.`);
  }
  return value;
}

/** Reads WEBHOOK_ALLOW_PRIVATE (comma-separated), WEBHOOK_TIMEOUT_MS and WEBHOOK_MAX_RESPONSE_BYTES; throws a ConfigError naming a bad one. */
export function webhookConfig(env: NodeJS.ProcessEnv): WebhookOptions {
  const allowPrivate = (env.WEBHOOK_ALLOW_PRIVATE ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  try {
    parseAllowList(allowPrivate);
  } catch (err) {
    throw new ConfigError('WEBHOOK_ALLOW_PRIVATE', `Invalid configuration: ${(err as Error).message}.`);
  }
  return {
    allowPrivate,
    timeoutMs: intFromEnv(env, 'WEBHOOK_TIMEOUT_MS', DEFAULT_TIMEOUT_MS, 1, 300_000),
    maxResponseBytes: intFromEnv(env, 'WEBHOOK_MAX_RESPONSE_BYTES', DEFAULT_MAX_RESPONSE_BYTES, 0, 16 * 1024 * 1024),
  };
}
