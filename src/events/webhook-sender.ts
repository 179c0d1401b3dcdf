/**
 * One webhook attempt over HTTP(S): Standard Webhooks signature, no redirects, a timeout for the answer's
 * status (its body is not read), and (unless private addresses are allowed) a refusal to connect to any address that
 * is not public, checked when the connection is made (a name that resolved to a public address at
 * registration may resolve to 127.0.0.1 or 169.254.169.254 now: DNS rebinding).
 */
import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { isPublicAddress } from '../domain/webhook-addresses.js';
import { inSpan, linksTo, SpanKind, SpanStatusCode, traceHeaders, tracingOn } from '../observability/tracing.js';

/** `v1,<base64 HMAC-SHA256(secret, id.timestamp.body)>` (Standard Webhooks); the secret's key is the base64 after `whsec_`. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface SendOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** Aborting ends the attempt at once (the instance is shutting down); the result says `aborted`. */
  signal?: AbortSignal;
  /**
   * With tracing on, the attempt is a `webhook delivery` span of its own trace, linked to the change that
   * wrote the event (its stored `traceparent`), and the request carries that span's `traceparent`.
   */
  trace?: { traceparent: string | null; eventId: number; endpointId: number; attempt: number };
}

export interface SendResult {
  /** The attempt was cut short by `signal`: it says nothing about the receiver. */
  aborted?: boolean;
  ok: boolean;
  status: number | null;
  durationMs: number;
  error: string | null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** dns.lookup that fails for any address that is not public. */
function publicOnlyLookup(hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback) {
  dnsLookup(hostname, { family: options.family ?? 0, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked || addresses.length === 0) {
      return callback(
        Object.assign(new Error(`${hostname} resolves to ${blocked?.address ?? 'nothing'}, which is not a public address`), {
          code: 'EADDRNOTPUBLIC',
        }),
        '',
      );
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

export function sendWebhook(target: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<SendResult> {
  if (!tracingOn()) return send(target, headers, body, options);
  const attributes = {
    'petstore.event.id': options.trace?.eventId,
    'petstore.webhook.id': options.trace?.endpointId,
    'petstore.webhook.attempt': options.trace?.attempt,
    // The host only: a receiver's path or query may hold a token of its own.
    'server.address': URL.canParse(target) ? new URL(target).hostname : undefined,
  };
  return inSpan(
    'webhook delivery',
    { root: true, kind: SpanKind.PRODUCER, attributes, links: linksTo(options.trace?.traceparent) },
    async (span) => {
      const result = await send(target, traceHeaders(headers), body, options);
      if (result.status !== null) span.setAttribute('http.response.status_code', result.status);
      // No message: a receiver's redirect target may hold a token of its own.
      if (!result.ok) span.setStatus({ code: SpanStatusCode.ERROR });
      return result;
    },
  );
}

function send(target: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const done = (ok: boolean, status: number | null, error: string | null): SendResult => ({
    ok,
    status,
    durationMs: Math.round(performance.now() - started),
    error,
  });
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return Promise.resolve(done(false, null, 'the URL is not valid'));
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivate) {
    if (url.protocol !== 'https:') return Promise.resolve(done(false, null, 'only https URLs are delivered to'));
    // A literal address is connected to without a lookup, so it is checked here.
    if (isIP(host) && !isPublicAddress(host)) return Promise.resolve(done(false, null, `${host} is not a public address`));
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The signal is the worker's, shared by every attempt: each takes its listener away when done.
      options.signal?.removeEventListener('abort', abort);
      resolve(result);
    };
    let req: ClientRequest;
    const timer = setTimeout(() => {
      finish(done(false, null, `no answer within ${options.timeoutMs} ms`));
      req.destroy();
    }, options.timeoutMs);
    const abort = () => {
      finish({ ...done(false, null, 'the sending instance shut down'), aborted: true });
      req?.destroy();
    };
    if (options.signal?.aborted) return abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    req = send(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup as never }),
      },
      (res) => {
        // The status decides, as soon as it arrives: the body is not read (a receiver that streams it slowly has
        // answered all the same), and the connection, never reused, is closed at once.
        const status = res.statusCode ?? 0;
        res.destroy();
        if (status >= 200 && status < 300) finish(done(true, status, null));
        else if (status === 304) finish(done(false, status, 'the receiver answered HTTP 304 Not Modified; answer 2xx'));
        else if (status >= 300 && status < 400)
          finish(
            done(false, status, `redirect${res.headers.location ? ` to ${res.headers.location}` : ''} not followed; give the final URL`),
          );
        else finish(done(false, status, `the receiver answered HTTP ${status}`));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => finish(done(false, null, describe(err))));
    req.end(body);
  });
}

function describe(err: NodeJS.ErrnoException): string {
  if (err.code === 'EADDRNOTPUBLIC') return err.message;
  if (err.code === 'ECONNREFUSED') return 'connection refused';
  if (err.code === 'ENOTFOUND') return 'the host name does not resolve';
  if (err.code === 'ECONNRESET') return 'the connection was reset';
  return err.code ? `connection failed (${err.code})` : 'connection failed';
}
