import { DriverException } from '@mikro-orm/core';

/** Why the database could not take the work now: still locked after the retries, or no room to grow the file. */
export type UnavailableReason = 'busy' | 'full';

/**
 * The database refused work it may take later: what the db layer throws once its own handling (SQLite's retries
 * while the file is locked) is spent, so the edge answers 503 without knowing the driver's codes. A MikroORM
 * `DriverException`, so the ORM hands it on as it is.
 */
export class DatabaseUnavailable extends DriverException {
  constructor(
    readonly reason: UnavailableReason,
    cause: Error,
  ) {
    super(cause);
    this.name = 'DatabaseUnavailable';
  }
}
