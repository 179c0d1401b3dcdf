import { validationFailed } from '../../../domain/errors.js';
import { MAX_ID, parseId } from '../../../domain/validate.js';

/**
 * The event an `ID` argument names (a subscription's `after:`), read as `Event.id` is written: the one place an
 * event id coming from GraphQL is decoded, so a change to how ids are encoded changes this function alone.
 * Anything else is VALIDATION_FAILED naming the argument.
 */
export function eventIdOf(value: string, path: string): number {
  const id = parseId(value);
  if (!(id >= 1 && id <= MAX_ID)) {
    const message = 'must be an Event.id, as an event you received gave it';
    throw validationFailed(`${path} ${message}.`, [{ path, message }]);
  }
  return id;
}
