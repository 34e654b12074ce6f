import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { bearer } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { freePort } from '../../scripts/temporalDevServer';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * Inbound mail (issue 31) on the cluster engine: an ENGINE=temporal API process with its inbound listener, a worker
 * process on a real Temporal server. An inbound domain verified on a loopback DNS server (its MX and the project's
 * TXT token), a webhook route; nodemailer delivers a message in; the worker's webhook queue delivers `email.received`
 * to a real receiver, and `standardwebhooks` verifies the signature.
 */
describeTemporal(__filename, 'Temporal: inbound mail to a signed email.received webhook', (temporal) => {
  const DOMAIN = 'in.cluster-shop.com';
  let receiver: WebhookReceiver;
  let dns: TestDnsServer;
  let inboundPort: number;
  let dataDir: string;
  // Before the cluster's own beforeAll (registered after it): the API's settings name the DNS server and the port.
  beforeAll(async () => {
    dns = await startDnsServer();
    inboundPort = await freePort();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-inbound-cluster-'));
    receiver = await startWebhookReceiver();
  });
  const c = heraldCluster(temporal, {
    workers: 1,
    workerEnv: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' },
    apiEnv: () => ({ SMTP_INBOUND_PORT: String(inboundPort), SMTP_INBOUND_HOST: '127.0.0.1', DNS_SERVERS: dns.address, DATA_DIR: dataDir }),
  });
  afterAll(async () => {
    await receiver?.close();
    await dns?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const key = () => bearer(c.project.secretKey);

  test('a message in: stored, and its email.received webhook arrives signed, from the worker', async () => {
    const domain = await c.http().post('/inbound/domains').set(key()).send({ domain: DOMAIN });
    expect(domain.status).toBe(201);
    const [mx, txt] = domain.body.data.records as { name: string; value: string }[];
    dns.set(DOMAIN, { MX: [mx!.value.slice(3)] });
    dns.set(txt!.name, { TXT: [txt!.value] });
    expect((await c.http().post(`/inbound/domains/${domain.body.data.id}/verify`).set(key())).body.data.status).toBe('VERIFIED');
    const hook = await c.http().post('/webhooks').set(key()).send({ url: `${receiver.url}/inbound`, events: ['email.received'] });
    expect(hook.status).toBe(201);
    const route = await c.http().post('/inbound/routes').set(key()).send({ match: `support@${DOMAIN}`, action: 'webhook', endpointId: hook.body.data.id });
    expect(route.status).toBe(201);

    // The API answers /health before its inbound listener is up (its STARTTLS certificate is made first).
    await waitFor('the inbound listener', () => new Promise<true | undefined>((resolve) => {
      const s = net.connect({ port: inboundPort, host: '127.0.0.1' }, () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(undefined));
    }), 30_000, 100);
    const mta = nodemailer.createTransport({ host: '127.0.0.1', port: inboundPort, secure: false, tls: { rejectUnauthorized: false } });
    const info = await mta.sendMail({ from: 'Grace <grace@example.org>', to: `support@${DOMAIN}`, subject: 'Help with my order', text: 'It has not arrived.',
      attachments: [{ filename: 'receipt.txt', content: 'order 42' }] });
    expect(info.response).toMatch(/^250 2\.0\.0 Stored/);
    const [msg] = await waitFor('email.received at the receiver', () => {
      const got = receiver.verified(hook.body.data.secret, '/inbound');
      return got.length ? got : undefined;
    }, 60_000);
    expect(msg!.payload).toMatchObject({ type: 'email.received', data: {
      routeId: route.body.data.id, recipient: `support@${DOMAIN}`, from: { address: 'grace@example.org', name: 'Grace' }, subject: 'Help with my order',
      text: 'It has not arrived.\n', attachments: [expect.objectContaining({ filename: 'receipt.txt', size: 8 })], auth: { spf: { result: expect.any(String) } },
    } });
    const id = (msg!.payload.data as { inboundId: string }).inboundId;
    expect((await c.http().get(`/inbound/${id}`).set(key())).body.data).toMatchObject({ id, subject: 'Help with my order' });
    const row = await waitFor('the delivery recorded as SUCCEEDED', async () => {
      const r = await c.db.knex('webhook_deliveries').where({ project_id: c.project.id, endpoint_id: hook.body.data.id }).first();
      return r?.status === 'SUCCEEDED' ? r : undefined;
    });
    expect(msg!.id).toBe(`msg_${row.id}`);
  });
});
