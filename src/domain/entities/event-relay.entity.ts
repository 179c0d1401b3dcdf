import { Entity, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';

/** How far a relay (the webhook fan-out) has read the outbox; its row is the lock instances take turns on. */
@Entity({ tableName: 'event_relays' })
export class EventRelay {
  @PrimaryKey({ type: 'string', length: 64 })
  name: string;

  /** The position read up to: the last event's transaction id and id (events are read in that order). */
  @Property({ type: new BigIntType('number'), default: 0 })
  lastTxid: number = 0;

  @Property({ type: new BigIntType('number') })
  lastEventId: number;

  constructor(name: string, lastEventId: number) {
    this.name = name;
    this.lastEventId = lastEventId;
  }
}
