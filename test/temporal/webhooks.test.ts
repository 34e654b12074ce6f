import { bearer } from '../support/app';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * Outbound webhooks on the cluster engine: an ENGINE=temporal API process and a worker process on a real Temporal
 * server. The email's delivery (the emails queue) and the campaign (a Temporal workflow) record their events; the
 * worker's webhook queue delivers them to a real receiver, and `standardwebhooks` verifies the signatures.
 */
describeTemporal(__filename, 'Temporal: signed webhooks delivered by the cluster\'s workers', (temporal) => {
  let receiver: WebhookReceiver;
  const c = heraldCluster(temporal, { workers: 1, workerEnv: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
  const key = () => bearer(c.project.secretKey);
  beforeAll(async () => { receiver = await startWebhookReceiver(); });
  afterAll(async () => { await receiver?.close(); });

  test('a send: its email.sent webhook arrives, verified; a campaign run by its Temporal workflow: campaign.sent', async () => {
    const hook = await c.http().post('/webhooks').set(key()).send({ url: `${receiver.url}/cluster`, events: ['email.sent', 'campaign.sent'] });
    expect(hook.status).toBe(201);
    const sent = await c.http().post('/v1/send').set(key()).send({ to: 'ada@example.org', from: 'hi@example.com', subject: 'Cluster', body: '<p>hi</p>' });
    expect(sent.status).toBe(200);
    const emailId = sent.body.data.emails[0].email as string;
    const [msg] = await waitFor('email.sent at the receiver', () => {
      const got = receiver.verified(hook.body.data.secret, '/cluster');
      return got.length ? got : undefined;
    }, 60_000);
    expect(msg!.payload).toMatchObject({ type: 'email.sent', data: { emailId, to: 'ada@example.org', subject: 'Cluster' } });
    const row = await waitFor('the outcome', async () => {
      const r = await c.db.knex('webhook_deliveries').where({ project_id: c.project.id, endpoint_id: hook.body.data.id }).first();
      return r?.status === 'SUCCEEDED' ? r : undefined;
    });
    expect(msg!.id).toBe(`msg_${row.id}`);

    await c.http().post('/contacts').set(key()).send({ email: 'reader@example.org', subscribed: true }).expect(201);
    const campaign = await c.http().post('/campaigns').set(key()).send({ name: 'Cluster news', subject: 'News', body: '<p>news</p>', from: 'hi@example.com', audienceType: 'ALL' });
    expect(campaign.status).toBe(201);
    const started = await c.http().post(`/campaigns/${campaign.body.data.id}/send`).set(key()).send({});
    expect(started.status).toBeLessThan(300);
    const done = await waitFor('campaign.sent at the receiver', () => receiver.verified(hook.body.data.secret, '/cluster').find((m) => m.payload.type === 'campaign.sent'), 90_000);
    expect(done.payload.data).toMatchObject({ campaignId: campaign.body.data.id, name: 'Cluster news', totalRecipients: 1 });
    // The campaign's own email.sent came too, to reader@ (the one subscribed contact).
    await waitFor('the campaign email\'s email.sent', () => receiver.verified(hook.body.data.secret, '/cluster').find((m) => m.payload.type === 'email.sent' && m.payload.data.to === 'reader@example.org'), 60_000);
  });
});
