import { isIP, type Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import proxyaddr from 'proxy-addr';
import ipaddr from 'ipaddr.js';
import type { TrustProxy } from '../config.js';

/** What the client address is read from: a request's headers and socket. */
export type RequestHead = Pick<IncomingMessage, 'headers' | 'socket'>;

/** A forwarding header longer than this is not from a proxy we trust: it is ignored. */
export const MAX_FORWARDED_FOR_LENGTH = 2048;

/** Sets `ctx.ip`, which everything below uses (limiter, logs), per `TRUST_PROXY`. */
export function clientAddress(trust: TrustProxy): Middleware {
  const resolve = clientAddressResolver(trust);
  return (ctx: Context, next: Next) => {
    ctx.request.ip = resolve(ctx.req);
    return next();
  };
}

/**
 * The client address of a request: the socket's, unless `trust` names the proxy hops or the
 * proxies in front of the service; then the right-most `X-Forwarded-For` entry not from a trusted proxy
 * (proxy-addr, as Express does). An oversized header, or one with any entry that is not an IP address,
 * is ignored (the socket's address), so a client cannot grow the limiter's keys or confuse the parse.
 * IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) read as IPv4.
 */
export function clientAddressResolver(trust: TrustProxy): (req: RequestHead) => string {
  const socketAddress = (req: RequestHead) => peerAddress(req.socket);
  if (!trust) return socketAddress;
  const trusted = 'hops' in trust ? (_address: string, hop: number) => hop < trust.hops : proxyaddr.compile(trust.proxies);
  return (req) => {
    const given = req.headers['x-forwarded-for'];
    if (given === undefined) return socketAddress(req);
    const header = Array.isArray(given) ? given.join(',') : given;
    if (header.length > MAX_FORWARDED_FOR_LENGTH) return socketAddress(req);
    if (!header.split(',').every((entry) => isIP(entry.trim()) !== 0)) return socketAddress(req);
    // proxy-addr reads a request's `headers` and `socket` only (its `forwarded` dependency).
    return normalise(proxyaddr(req as IncomingMessage, trusted));
  };
}

/** The peer's address, normalised once per connection (a keep-alive socket serves many requests). */
const PEER = Symbol('normalisedPeerAddress');
function peerAddress(socket: Socket & { [PEER]?: string }): string {
  const cached = socket[PEER];
  if (cached !== undefined) return cached;
  const address = socket.remoteAddress;
  // A destroyed socket has no address any more: nothing to remember.
  if (address === undefined) return '';
  return (socket[PEER] = normalise(address));
}

function normalise(address: string): string {
  return ipaddr.isValid(address) ? ipaddr.process(address).toString() : address;
}
