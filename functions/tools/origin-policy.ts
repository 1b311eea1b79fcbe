import { BlockList, isIP } from 'node:net';
import { SETTINGS } from '../contract/environment';
import { ReservedEndpoints } from './reserved-endpoints';

/**
 * The server-side request forgery guard of `webhook.post` (the contract, §4): which URLs may be called, and
 * which resolved addresses a call may connect to.
 *
 * Two checks, at two moments:
 * - the URL (scheme, host, port, userinfo) against the allow list, inside the zod schema, so that a
 *   refused URL is a validation error that creates no record;
 * - every address the host resolves to, at execute time, just before connecting to one of them.
 *
 * Whatever the list says, the deployment's own endpoints ({@link ReservedEndpoints}: the local
 * DynamoDB, SQS and API in local mode, the Lambda runtime API on AWS) are refused at both moments.
 *
 * ```
 * entry                      allows
 * https://hooks.example.com  https, that host, port 443
 * http://127.0.0.1:8080      http, that address, port 8080
 * http://localhost           http, localhost, any port in local mode (port 80 on AWS)
 * hooks.example.com          https on AWS; http or https in local mode (default ports)
 * ```
 */

/** One parsed entry of an allow list. */
export interface AllowedOrigin {
  /** `undefined`: the entry named no scheme (https on AWS, either scheme in local mode). */
  scheme: 'http' | 'https' | undefined;
  /** WHATWG-normalized host name, as `URL.hostname` spells it (IPv6 literals keep their brackets). */
  host: string;
  /** `undefined`: the entry named no port. */
  port: number | undefined;
  /** An IP literal names its address; `localhost` names the loopback addresses; a name names none. */
  hostKind: 'ip' | 'localhost' | 'name';
  /** The host is `localhost` or a loopback literal (where a port-less entry may mean any port). */
  loopback: boolean;
}

/** Why a URL was refused; the reason never repeats the URL. */
export type UrlVerdict = { ok: true; url: URL; origin: AllowedOrigin } | { ok: false; reason: string };

/** What an address is, as far as the policy cares. */
export type AddressClass = 'loopback' | 'special' | 'public' | 'invalid';

const DEFAULT_PORTS = { http: 80, https: 443 } as const;

/** Special-purpose ranges that a name on the public internet has no business resolving to. */
const SPECIAL_IPV4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network", including 0.0.0.0 which reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, including the instance metadata service 169.254.169.254
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24],
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, including the broadcast address
];

const SPECIAL_IPV6: readonly [string, number][] = [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible form
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments, including Teredo
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4, which embeds an IPv4 address
  ['fc00::', 7], // unique local, including the IPv6 metadata service fd00:ec2::254
  ['fe80::', 10], // link-local
  ['fec0::', 10], // deprecated site-local
  ['ff00::', 8], // multicast
];

function blockList(v4: readonly [string, number][], v6: readonly [string, number][]): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of v4) list.addSubnet(network, prefix, 'ipv4');
  for (const [network, prefix] of v6) list.addSubnet(network, prefix, 'ipv6');
  return list;
}

// BlockList checks IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) against the IPv4 rules by itself.
const SPECIAL = blockList(SPECIAL_IPV4, SPECIAL_IPV6);
const LOOPBACK = blockList([['127.0.0.0', 8]], [['::1', 128]]);
const NAT64 = blockList([], [['64:ff9b::', 96]]);

/**
 * Classifies an IP address: `loopback` (127/8, ::1 and their mapped forms), `special` (any other
 * private, link-local, reserved or multicast range, or the unspecified address), `public`, or
 * `invalid` (not an IP address). A NAT64 address is judged by the IPv4 address it embeds.
 *
 * @example
 * ```ts
 * classifyAddress('::ffff:127.0.0.1'); // 'loopback'
 * classifyAddress('169.254.169.254');  // 'special'
 * classifyAddress('93.184.215.14');    // 'public'
 * ```
 */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/%.*$/, ''); // zone index of a scoped address
  const version = isIP(bare);
  if (version === 0) return 'invalid';
  const type = version === 4 ? 'ipv4' : 'ipv6';
  if (type === 'ipv6' && NAT64.check(bare, 'ipv6')) return classifyAddress(embeddedIpv4(bare));
  if (LOOPBACK.check(bare, type)) return 'loopback';
  if (SPECIAL.check(bare, type)) return 'special';
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address. */
function ipv6Groups(address: string): number[] {
  // The URL parser canonicalizes IPv6 (hex groups, no dotted tail), which leaves only `::` to expand.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? 0 : 8 - headGroups.length - tailGroups.length;
  return [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups].map((group) =>
    Number.parseInt(group, 16),
  );
}

function embeddedIpv4(address: string): string {
  const groups = ipv6Groups(address);
  const high = groups[6] ?? 0;
  const low = groups[7] ?? 0;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The same IP address spelled one way (no brackets, no zone), so equal addresses compare equal. */
function canonicalIp(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  return isIP(bare) === 6 ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : bare;
}

/**
 * Parses one allow-list entry: `[scheme://]host[:port]`, optionally with a trailing `/`, and nothing
 * else (no userinfo, path, query or fragment). Throws a plain `Error` naming the problem: entries are
 * deployment configuration, checked when the tools are built.
 *
 * @example
 * ```ts
 * parseAllowedOrigin('http://127.0.0.1'); // { scheme: 'http', host: '127.0.0.1', port: undefined, ... }
 * ```
 */
export function parseAllowedOrigin(entry: string): AllowedOrigin {
  const match =
    /^(?:([a-zA-Z][a-zA-Z0-9+.-]*):\/\/)?(\[[0-9a-fA-F:.]+\]|[^/?#@:[\]\s]+)(?::(\d{1,5}))?\/?$/.exec(
      entry.trim(),
    );
  if (!match) throw new Error('an allowed origin must be [scheme://]host[:port]');
  const [, rawScheme, rawHost = '', rawPort] = match;
  const scheme = rawScheme?.toLowerCase();
  if (scheme !== undefined && scheme !== 'http' && scheme !== 'https') {
    throw new Error('an allowed origin must use http or https');
  }
  let host: string;
  try {
    host = new URL(`${scheme ?? 'https'}://${rawHost}/`).hostname;
  } catch {
    throw new Error('an allowed origin has an invalid host');
  }
  const port = rawPort === undefined ? undefined : Number(rawPort);
  if (port !== undefined && (port < 1 || port > 65_535))
    throw new Error('an allowed origin has an invalid port');
  const hostKind =
    isIP(host.replace(/^\[|\]$/g, '')) !== 0 ? 'ip' : host === 'localhost' ? 'localhost' : 'name';
  const loopback =
    hostKind === 'localhost' || (hostKind === 'ip' && classifyAddress(canonicalIp(host)) === 'loopback');
  return { scheme, host, port, hostKind, loopback };
}

/** An allow-list entry that names one of the deployment's own endpoints outright, by position. */
export interface ReachingEntry {
  /** Index of the allow-list entry. */
  entry: number;
  /** Index of the endpoint it reaches. */
  endpoint: number;
}

/**
 * The allow-list entries that name one of `endpoints` outright: its scheme, host (as an IP address,
 * `localhost` or the same name) and port, the port given or the scheme's default. Such an entry is a
 * configuration that contradicts itself (the endpoint is refused at run time whatever the list says),
 * so deployments refuse it at start or synth. A port-less loopback entry in local mode allows any port
 * and names none: the endpoints are carved out of it at run time, as local mode's own ports are.
 * Entries must already parse ({@link parseAllowedOrigin}).
 *
 * @example
 * ```ts
 * entriesReaching(['http://127.0.0.1', 'http://localhost:8931'], ['http://127.0.0.1:8931/mcp'], { local: true });
 * // [{ entry: 1, endpoint: 0 }]
 * ```
 */
export function entriesReaching(
  entries: readonly string[],
  endpoints: readonly string[],
  options: { local: boolean },
): ReachingEntry[] {
  const reserved = endpoints.map((endpoint) => new ReservedEndpoints([endpoint]));
  const found: ReachingEntry[] = [];
  entries.forEach((raw, entry) => {
    const origin = parseAllowedOrigin(raw);
    if (options.local && origin.loopback && origin.port === undefined) return;
    const schemes: ('http' | 'https')[] = origin.scheme
      ? [origin.scheme]
      : options.local
        ? ['http', 'https']
        : ['https'];
    reserved.forEach((endpoint, index) => {
      const named = schemes.some((scheme) =>
        endpoint.namedBy(new URL(`${scheme}://${origin.host}:${origin.port ?? DEFAULT_PORTS[scheme]}/`)),
      );
      if (named) found.push({ entry, endpoint: index });
    });
  });
  return found;
}

/**
 * An allow list of origins with the mode's rules applied. Built once per deployment; both checks
 * are pure apart from the DNS answer the caller passes in.
 *
 * @example
 * ```ts
 * const policy = new OriginPolicy(['http://127.0.0.1'], { local: true });
 * policy.checkUrl('http://127.0.0.1:8080/hook').ok;                 // true
 * policy.checkUrl('http://user:pw@127.0.0.1/').ok;                   // false: userinfo
 * policy.addressAllowed(parseAllowedOrigin('https://a.example'), '10.0.0.1'); // false
 * ```
 */
export class OriginPolicy {
  /** The parsed entries, in the order given. */
  readonly origins: readonly AllowedOrigin[];
  private readonly local: boolean;
  private readonly reserved: ReservedEndpoints | undefined;

  /**
   * Throws a plain `Error` (with the entry's index, not its value) when an entry is malformed.
   * `reserved`: endpoints refused whatever the entries say.
   */
  constructor(entries: readonly string[], options: { local: boolean; reserved?: ReservedEndpoints }) {
    this.local = options.local;
    this.reserved = options.reserved;
    this.origins = entries.map((entry, index) => {
      try {
        return parseAllowedOrigin(entry);
      } catch (error) {
        throw new Error(`allowed origin #${index + 1}: ${(error as Error).message}`);
      }
    });
  }

  /**
   * Checks a URL against the allow list. On success, `url` is the parsed (WHATWG-normalized) URL and
   * `origin` the entry that allowed it. Reasons never contain the URL.
   */
  checkUrl(raw: string): UrlVerdict {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { ok: false, reason: 'must be an absolute URL' };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return { ok: false, reason: 'must use http or https' };
    // The raw check also catches an empty userinfo (`http://@host/`), which the parser drops silently.
    if (url.username !== '' || url.password !== '' || /^[a-z][a-z0-9+.-]*:\/*[^/?#]*@/i.test(raw.trim())) {
      return { ok: false, reason: 'must not contain credentials (userinfo)' };
    }
    const origin = this.match(url);
    if (!origin) {
      return {
        ok: false,
        reason:
          `the origin (scheme, host and port) is not allowed: add it to ${SETTINGS.webhookAllow.name} in local mode, ` +
          "or to the construct's webhookAllow on AWS",
      };
    }
    if (this.reserved?.namedBy(url)) {
      return { ok: false, reason: 'names a service endpoint of the ledger itself, which tools never reach' };
    }
    return { ok: true, url, origin };
  }

  /** The first entry that allows the URL's scheme, host and port exactly, if any. */
  match(url: URL): AllowedOrigin | undefined {
    const scheme = url.protocol.slice(0, -1);
    if (scheme !== 'http' && scheme !== 'https') return undefined;
    const port = url.port === '' ? DEFAULT_PORTS[scheme] : Number(url.port);
    return this.origins.find((origin) => {
      if (origin.host !== url.hostname) return false;
      const schemeAllowed =
        origin.scheme === undefined ? scheme === 'https' || this.local : origin.scheme === scheme;
      if (!schemeAllowed) return false;
      if (origin.port !== undefined) return origin.port === port;
      return (this.local && origin.loopback) || port === DEFAULT_PORTS[scheme];
    });
  }

  /**
   * Whether a call allowed by `origin` may connect to `address`: an IP entry to exactly its own
   * address, `localhost` to loopback addresses only, a name to public addresses only (a name that
   * resolves to a private, link-local or loopback address is refused, whatever the DNS says).
   */
  addressAllowed(origin: AllowedOrigin, address: string): boolean {
    return this.addressClassAllowed(origin, address);
  }

  /**
   * Whether a connection to `address`:`port` is one of the deployment's own service endpoints, which
   * no entry can allow.
   */
  reservedEndpoint(address: string, port: number): boolean {
    return this.reserved?.reaches(address, port) ?? false;
  }

  private addressClassAllowed(origin: AllowedOrigin, address: string): boolean {
    const kind = classifyAddress(address);
    if (kind === 'invalid') return false;
    if (origin.hostKind === 'ip') return canonicalIp(address) === canonicalIp(origin.host);
    if (origin.hostKind === 'localhost') return kind === 'loopback';
    return kind === 'public';
  }
}
