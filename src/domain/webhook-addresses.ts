/**
 * The addresses a webhook may reach (the guard against server-side request forgery): public unicast addresses and
 * dotted public names only, unless the policy allows private ones (development and tests). Checked when an endpoint
 * is registered or changed, and again at every connection (src/events/webhook-sender.ts).
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { validationFailed } from './errors.js';
import * as v from './validate.js';

const blocks = (cidrs: string[]) => cidrs.map((c) => ipaddr.parseCIDR(c));

/** The space a public unicast address may be in: IPv4 below 224.0.0.0 (multicast and reserved above it), IPv6's global unicast 2000::/3. */
const PUBLIC_SPACE = {
  ipv4: blocks(['0.0.0.0/1', '128.0.0.0/2', '192.0.0.0/3']),
  ipv6: blocks(['2000::/3']),
};

/**
 * Blocks inside that space that are not public (IANA's special-purpose address registries): this
 * network, private, shared (CGNAT), loopback, link-local, protocol assignments, documentation,
 * 6to4 relays, benchmarking; IPv6 protocol assignments (Teredo among them), documentation and 6to4
 * (which embeds any IPv4 address).
 */
const NOT_PUBLIC = {
  ipv4: blocks([
    '0.0.0.0/8',
    '10.0.0.0/8',
    '100.64.0.0/10',
    '127.0.0.0/8',
    '169.254.0.0/16',
    '172.16.0.0/12',
    '192.0.0.0/24',
    '192.0.2.0/24',
    '192.31.196.0/24',
    '192.52.193.0/24',
    '192.88.99.0/24',
    '192.168.0.0/16',
    '192.175.48.0/24',
    '198.18.0.0/15',
    '198.51.100.0/24',
    '203.0.113.0/24',
  ]),
  ipv6: blocks(['2001::/23', '2001:db8::/32', '2002::/16', '3fff::/20']),
};

/**
 * An address a webhook may reach: public unicast only. The address must lie in the space a public
 * unicast address may be in and outside every special-purpose block (an allow-list: a spelling
 * nobody listed is refused, not let through); an IPv6 address that carries an IPv4 one (IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`) is judged by the IPv4 address it reaches.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip: ipaddr.IPv4 | ipaddr.IPv6 = ipaddr.parse(address);
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    else if (v6.parts.slice(0, 6).every((part) => part === 0)) ip = new ipaddr.IPv4(v6.toByteArray().slice(12));
  }
  const within = (list: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>) =>
    list.some((range) => ip.kind() === range[0].kind() && ip.match(range));
  const kind = ip.kind();
  return within(PUBLIC_SPACE[kind]) && !within(NOT_PUBLIC[kind]) && ip.range() === 'unicast';
}

/** Names that never resolve to a public address (RFC 6761 and its successors), besides single labels. */
const NOT_PUBLIC_NAMES = /(^|\.)(localhost|local|internal|home\.arpa|invalid|test|onion)$/;

/**
 * A host name a webhook may be registered with: a dotted name outside the special-use names. A
 * trailing dot (`localhost.`, the same name written fully qualified) is ignored. Where it resolves is
 * checked again at every connection (src/events/webhook-sender.ts).
 */
export function isPublicName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name.includes('.') && !NOT_PUBLIC_NAMES.test(name);
}

/** The longest webhook URL kept (the column and the OpenAPI document's `maxLength`). */
const MAX_URL_LENGTH = 2048;

/**
 * A webhook URL as it is stored: https only, and no address that is not public, unless `allowPrivate`. This is the
 * first check; the delivery checks the address again when it connects (the name may resolve elsewhere by then).
 */
export function checkedWebhookUrl(value: unknown, allowPrivate: boolean): string {
  const text = v.trimmedText(value, 'url', MAX_URL_LENGTH);
  const refuse = (message: string) => validationFailed(`url ${message}.`, [{ path: 'url', message }]);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse('must be an absolute URL such as https://example.com/hooks');
  }
  if (url.username || url.password) throw refuse('must not carry credentials');
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw refuse('must use https');
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) ? !isPublicAddress(host) : !isPublicName(host)) throw refuse('must point to a public address');
  }
  // Stored and sent as the URL standard writes it: non-ASCII characters percent-encoded, which can make it longer.
  const normalised = url.toString();
  if (normalised.length > MAX_URL_LENGTH) throw refuse(`must be at most ${MAX_URL_LENGTH} characters once percent-encoded`);
  return normalised;
}
