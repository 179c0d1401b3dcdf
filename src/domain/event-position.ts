/**
 * A place in the outbox's read order. Events are read by their writing transaction's id, then their own id
 * (src/domain/events.service.ts): ids are given at insert, and two transactions may commit in the other order.
 */
export interface EventPosition {
  /** The transaction id of the event at this place (0 on SQLite, and for events written before it was recorded). */
  txid: number;
  id: number;
}

/** Before every event. */
export const OUTBOX_START: EventPosition = { txid: 0, id: 0 };

/** Whether `a` comes after `b` in the read order. */
export const isAfter = (a: EventPosition, b: EventPosition) => a.txid > b.txid || (a.txid === b.txid && a.id > b.id);
