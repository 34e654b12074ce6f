import { bearer } from '../support/app';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

/**
 * The cluster mode end to end on a real Temporal server (the run's dev server): an ENGINE=temporal API process, two
 * worker processes, PostgreSQL and a real SMTP server. Asserts on what arrives at the SMTP server and in the database.
 */
describeTemporal(__filename, 'Temporal cluster: API and worker processes on a real Temporal server', (temporal) => {
  const c = heraldCluster(temporal);
  const key = () => bearer(c.project.secretKey);

  test('POST /v1/send is delivered once', async () => {
    const before = c.smtp.received.length;
    const res = await c.http().post('/v1/send').set(key()).send({ to: 'ada@example.org', from: 'hi@example.com', subject: 'Hi', body: '<p>Hello</p>' });
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].email as string;
    await c.smtp.waitFor(before + 1, 30_000);
    const row = await waitFor('SENT', async () => {
      const r = await c.db.knex('emails').where({ id: emailId }).first();
      return r?.status === 'SENT' ? r : undefined;
    });
    expect(row.message_id).toBe(`<${emailId}@example.com>`);
    await new Promise((r) => setTimeout(r, 500));
    expect(c.smtp.received.slice(before).filter((m) => m.envelopeTo[0] === 'ada@example.org')).toHaveLength(1);
  }, 60_000);
});
