import { DomainError, validationFailed } from '../../../domain/errors.js';
import { MAX_ID, parseId } from '../../../domain/validate.js';
import { decodeEventId } from '../../global-id.js';

/**
 * The event an `ID` argument names (a subscription's `after:`): an `Event.id` (a global id, decoded by
 * src/graphql/global-id.ts), or the event's `databaseId` in digits (REST's event id: a client moving from the feed
 * to a subscription has only that; a global id is never all digits). Anything else is VALIDATION_FAILED naming the
 * argument.
 */
export function eventIdOf(value: string, path: string): number {
  const databaseId = parseId(value);
  if (databaseId >= 1 && databaseId <= MAX_ID) return databaseId;
  try {
    return decodeEventId(value, path);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const message = "must be an Event.id or an event's databaseId, as an event you received gave it";
    throw validationFailed(`${path} ${message}.`, [{ path, message }]);
  }
}
