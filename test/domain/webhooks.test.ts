import { after, before, describe, it } from 'node:test';
import { rejectsWith, startDomain, type DomainFixture } from './support.js';

/** Webhook rules held by the domain, so both facades get them (no HTTP). */
describe('domain: webhooks', () => {
  let f: DomainFixture;
  before(async () => {
    f = await startDomain();
  });
  after(() => f?.close());

  it('when an update changes nothing, then VALIDATION_FAILED, whichever facade sent it', async () => {
    await rejectsWith(f.domain().webhooks.updateWebhook(f.customer, 1, {}), 'VALIDATION_FAILED');
  });
});
