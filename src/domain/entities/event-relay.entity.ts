import { Entity, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';

/** How far a relay (the webhook fan-out) has read the outbox; its row is the lock instances take turns on. */
@Entity({ tableName: 'event_relays' })
export class EventRelay {
  @PrimaryKey({ type: 'string', length: 64 })
  name: string;

  @Property({ type: new BigIntType('number') })
  lastEventId: number;

  constructor(name: string, lastEventId: number) {
    this.name = name;
    this.lastEventId = lastEventId;
  }
}
