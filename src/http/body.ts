import getRawBody from 'raw-body';
import type { Context } from 'koa';
import { HttpError } from './errors.js';
import { requestHeader } from './context.js';
import { validationFailed } from '../domain/errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

const isJson = (type: string | undefined) => !!type && /^application\/([a-z.+-]*\+)?json$/i.test(type.split(';')[0]!.trim());

/**
 * Reads a JSON request body (at most 1 MiB) for both facades: 413 when larger, 415 when a body is not
 * JSON, 400 when it is malformed. A request without a body gives undefined.
 */
export async function readJsonBody(ctx: Context, { requireJsonType = true } = {}): Promise<unknown> {
  const length = ctx.request.length;
  const chunked = requestHeader(ctx, 'transfer-encoding') !== '';
  if (!chunked && !length) return undefined;
  if (length && length > MAX_BODY_BYTES) throw tooLarge();
  const type = requestHeader(ctx, 'content-type');
  if (!isJson(type)) {
    if (!requireJsonType) return undefined;
    throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'Send the request body as JSON with Content-Type: application/json.');
  }
  // A compressed body is not read as JSON bytes (it would fail as invalid UTF-8): say what to do instead.
  const encoding = requestHeader(ctx, 'content-encoding').trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    throw new HttpError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding ${encoding.slice(0, 40)} is not supported; send the JSON body uncompressed.`,
    );
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type)?.[1];
  if (charset && !/^utf-?8$/i.test(charset)) {
    throw new HttpError('UNSUPPORTED_MEDIA_TYPE', `JSON must be UTF-8; charset=${charset.slice(0, 40)} is not supported.`);
  }
  let text: string;
  try {
    const bytes = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, length: length || undefined });
    try {
      // Fatal decoding: invalid UTF-8 is refused rather than silently turned into U+FFFD.
      text = utf8.decode(bytes);
    } catch {
      throw validationFailed('The request body is not valid UTF-8.', [{ path: 'body', message: 'invalid UTF-8' }]);
    }
  } catch (error) {
    if (error instanceof Error && error.name === 'DomainError') throw error;
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large') throw tooLarge();
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be UTF-8 JSON.');
    }
    throw validationFailed('The request body could not be read completely.');
  }
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw validationFailed('The request body is not valid JSON.', [{ path: 'body', message: 'malformed JSON' }]);
  }
}

// The rest of an oversized body is never read, so the connection cannot carry another request.
const tooLarge = () =>
  new HttpError('PAYLOAD_TOO_LARGE', `The request body is larger than ${MAX_BODY_BYTES} bytes.`, { Connection: 'close' });
