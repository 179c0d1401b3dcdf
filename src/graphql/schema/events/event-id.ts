import { DomainError, validationFailed } from '../../../domain/errors.js';
import { decodeEventId } from '../../global-id.js';

/**
 * The event an `ID` argument names (a subscription's `after:`), read as `Event.id` is written: a global id, decoded
 * by src/graphql/global-id.ts. Anything else is VALIDATION_FAILED naming the argument.
 */
export function eventIdOf(value: string, path: string): number {
  try {
    return decodeEventId(value, path);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const message = 'must be an Event.id, as an event you received gave it';
    throw validationFailed(`${path} ${message}.`, [{ path, message }]);
  }
}
