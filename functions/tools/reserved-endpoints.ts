import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * The deployment's own service endpoints, which no tool may reach whatever its allow list says: an
 * agent that can speak to the ledger's store (dynalite checks no signature) can rewrite every tenant's
 * records, and a tool that reaches the Lambda runtime API can take another caller's invocation.
 *
 * An entry is `[scheme://]host:port` (a URL's path is ignored; without a port, the scheme's default).
 * What an entry reserves depends on its host:
 *
 * ```
 * entry host                          refused connections
 * loopback, 0.0.0.0, ::, localhost    that port on EVERY address of this machine (loopback, unspecified,
 *                                     any local interface): a server bound to one of them, or to all
 *                                     (fauxqs listens on every interface), answers on several
 * another IP address                  that address (IPv4-mapped forms too) and port
 * a name                              URLs naming that host and port (the name is not resolved here)
 * ```
 */

/** One parsed reserved endpoint. */
interface ReservedEndpoint {
  /** Canonical IP (no brackets, IPv4-mapped unwrapped) or lowercase name. */
  host: string;
  port: number;
  /** The host is this machine: the port is reserved on every local address. */
  onThisMachine: boolean;
  kind: 'ip' | 'name';
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/**
 * The same IP address spelled one way: no brackets, no zone, lowercase IPv6, and an IPv4-mapped or
 * IPv4-compatible-mapped IPv6 address as its IPv4 address, so `::ffff:127.0.0.1` equals `127.0.0.1`.
 * `undefined` when it is not an IP address.
 */
export function canonicalAddress(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const version = isIP(bare);
  if (version === 0) return undefined;
  if (version === 4) return bare;
  const canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (mapped) {
    const high = Number.parseInt(mapped[1] ?? '0', 16);
    const low = Number.parseInt(mapped[2] ?? '0', 16);
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  }
  return canonical;
}

/** An address that always means this machine: loopback, or the unspecified/"this network" ones. */
function alwaysThisMachine(address: string): boolean {
  if (address.includes(':')) return address === '::1' || address === '::';
  return address.startsWith('127.') || address.startsWith('0.');
}

/** Every address of this machine's interfaces, canonical; read at each check (interfaces change). */
function interfaceAddresses(): Set<string> {
  const addresses = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) {
      const canonical = canonicalAddress(entry.address);
      if (canonical !== undefined) addresses.add(canonical);
    }
  }
  return addresses;
}

function parseEntry(entry: string): ReservedEndpoint {
  const trimmed = entry.trim();
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`);
  } catch {
    throw new Error('a reserved endpoint must be [scheme://]host:port');
  }
  const port = url.port === '' ? DEFAULT_PORTS[url.protocol] : Number(url.port);
  if (port === undefined || url.hostname === '')
    throw new Error('a reserved endpoint must be [scheme://]host:port');
  const ip = canonicalAddress(url.hostname);
  if (ip !== undefined) return { host: ip, port, onThisMachine: alwaysThisMachine(ip), kind: 'ip' };
  const name = url.hostname.toLowerCase();
  return { host: name, port, onThisMachine: name === 'localhost', kind: 'name' };
}

/**
 * The reserved endpoints of one deployment. Built once; {@link reaches} is asked about every address
 * a call would connect to, and again with the socket's actual peer once it has connected.
 *
 * @example
 * ```ts
 * const reserved = new ReservedEndpoints(['http://127.0.0.1:8000', '127.0.0.1:9001']);
 * reserved.reaches('::ffff:127.0.0.1', 8000); // true
 * reserved.reaches('127.0.0.1', 8001);        // false
 * ```
 */
export class ReservedEndpoints {
  private readonly entries: readonly ReservedEndpoint[];

  /** Throws a plain `Error` (with the entry's index, not its value) when an entry is malformed. */
  constructor(entries: readonly string[]) {
    this.entries = entries.map((entry, index) => {
      try {
        return parseEntry(entry);
      } catch (error) {
        throw new Error(`reserved endpoint #${index + 1}: ${(error as Error).message}`);
      }
    });
  }

  /** Whether there are none (then every check is a no-op). */
  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** Whether a connection to `address`:`port` would reach a reserved endpoint. */
  reaches(address: string, port: number): boolean {
    const canonical = canonicalAddress(address);
    if (canonical === undefined) return false;
    const atPort = this.entries.filter((entry) => entry.port === port);
    if (atPort.length === 0) return false;
    if (atPort.some((entry) => entry.kind === 'ip' && entry.host === canonical)) return true;
    if (!atPort.some((entry) => entry.onThisMachine)) return false;
    return alwaysThisMachine(canonical) || interfaceAddresses().has(canonical);
  }

  /** Whether a URL names a reserved endpoint by its literal host (an IP, `localhost` or a reserved name). */
  namedBy(url: URL): boolean {
    const port = url.port === '' ? DEFAULT_PORTS[url.protocol] : Number(url.port);
    if (port === undefined) return false;
    const host = url.hostname.toLowerCase();
    if (host === 'localhost' && this.reaches('127.0.0.1', port)) return true;
    if (this.entries.some((entry) => entry.kind === 'name' && entry.host === host && entry.port === port))
      return true;
    const ip = canonicalAddress(host);
    return ip !== undefined && this.reaches(ip, port);
  }
}
