import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Orm } from '../db/orm.js';
import type { SqlReader } from '../domain/reader.js';
import type { Metrics } from '../observability/metrics.js';
import { startOutboxUpkeep } from './outbox-upkeep.js';
import { startWebhookDispatcher } from './webhook-dispatcher.js';
import { EventStream } from './event-stream.js';
import type { OutboxNotifier } from './outbox-notifier.js';
import type { Commits } from './commit-signal.js';

export interface EventWorkers {
  /** Committed events as they come, for GraphQL subscriptions on this instance. */
  eventStream: EventStream;
  /** Stops the purge, the commit signal and the notifier's wake-ups, the webhook worker and the stream, in that order. */
  stop(): Promise<void>;
}

/**
 * What every instance runs in the background for events: the outbox's purge, the webhook worker,
 * and the reader that feeds GraphQL subscriptions. The last two wake at once when this process
 * commits (`commits`) and, on PostgreSQL, when another instance announces its commits (`notifier`, which the
 * app owns: it announces this process's commits until after the HTTP drain); otherwise they poll for other
 * processes' writes, less and less often while nothing happens (idle, they cost next to nothing).
 */
export function startEventWorkers(
  orm: Orm,
  reader: SqlReader,
  logger: Logger,
  config: Pick<Config, 'webhooks' | 'subscriptionPollMs' | 'subscriptionPollMaxMs' | 'subscriptionBacklogMax' | 'database'>,
  metrics: Pick<Metrics, 'webhookAttempt' | 'webhookEndpointDisabled'>,
  commits: Commits,
  notifier?: OutboxNotifier,
): EventWorkers {
  const stopOutboxUpkeep = startOutboxUpkeep(orm, logger);
  const webhooks = startWebhookDispatcher(orm, reader, logger, {
    ...config.webhooks,
    onAttempt: (outcome, lagSeconds) => metrics.webhookAttempt(outcome, lagSeconds),
    onEndpointDisabled: () => metrics.webhookEndpointDisabled(),
  });
  const eventStream = new EventStream(orm, logger, config.subscriptionPollMs, config.subscriptionPollMaxMs, config.subscriptionBacklogMax);
  const wake = () => {
    eventStream.wake();
    webhooks.wake();
  };
  const stopCommitSignal = commits.listen(wake);
  const stopHearing = notifier?.onHeard(wake);
  return {
    eventStream,
    async stop() {
      await stopOutboxUpkeep();
      stopCommitSignal();
      stopHearing?.();
      await webhooks.stop();
      await eventStream.close();
    },
  };
}
