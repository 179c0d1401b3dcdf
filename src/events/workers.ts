import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Orm } from '../db/orm.js';
import type { Metrics } from '../observability/metrics.js';
import { startOutboxUpkeep } from './outbox-upkeep.js';
import { startWebhookDispatcher } from './webhook-dispatcher.js';
import { EventStream } from './event-stream.js';
import { listenForEvents } from './outbox-notifier.js';

export interface EventWorkers {
  /** Committed events as they come, for GraphQL subscriptions on this instance. */
  eventStream: EventStream;
  /** Stops the purge, the notifier, the webhook worker and the stream, in that order. */
  stop(): Promise<void>;
}

/**
 * What every instance runs in the background for events: the outbox's purge, the webhook worker,
 * and the reader that feeds GraphQL subscriptions; on PostgreSQL, a LISTEN that wakes the last two on
 * every instance when an event commits (they poll otherwise).
 */
export function startEventWorkers(
  orm: Orm,
  logger: Logger,
  config: Pick<Config, 'webhooks' | 'subscriptionPollMs' | 'database'>,
  metrics: Pick<Metrics, 'webhookAttempt' | 'webhookEndpointDisabled'>,
): EventWorkers {
  const stopOutboxUpkeep = startOutboxUpkeep(orm, logger);
  const webhooks = startWebhookDispatcher(orm, logger, {
    ...config.webhooks,
    onAttempt: (outcome, lagSeconds) => metrics.webhookAttempt(outcome, lagSeconds),
    onEndpointDisabled: () => metrics.webhookEndpointDisabled(),
  });
  const eventStream = new EventStream(orm, logger, config.subscriptionPollMs);
  const notifier =
    config.database.kind === 'postgresql'
      ? listenForEvents(config.database.url, logger, () => {
          eventStream.wake();
          webhooks.wake();
        })
      : undefined;
  return {
    eventStream,
    async stop() {
      await stopOutboxUpkeep();
      await notifier?.close();
      await webhooks.stop();
      await eventStream.close();
    },
  };
}
