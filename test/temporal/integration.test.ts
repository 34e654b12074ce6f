import { execFile, type ChildProcess } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { promisify } from 'node:util';
import { dkimVerify } from 'mailauth';
import { Domain } from '../../db/models/Domain';
import { MAX_UNRECORDED } from '../../worker/deliveryQueue';
import { addDomain, ensureDomainKey } from '../../domains/rows';
import { dkimRecordName, dkimRecordValue } from '../../domains/records';
import { bearer, TEST_SECRET } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { temporal as proto } from '@temporalio/proto';
import { WORKFLOW_TASK_QUEUE } from '../../workflows/policy';
import { exited, killGroup, runHerald, waitFor } from '../support/processes';
import { startSinkProcess, type Received } from '../support/smtp';
import { addGroupContacts, heraldCluster } from '../support/temporalCluster';
import { cancelMidFlight, type CancelRun } from '../support/cancelStops';
import { describeTemporal } from '../support/temporal';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const temporalCli = require('../../scripts/temporal.js') as { findTemporal(): string | undefined };
const run = promisify(execFile);

type Counts = Partial<Record<'QUEUED' | 'SENDING' | 'SENT' | 'FAILED' | 'CANCELLED', number>>;

/**
 * The cluster mode end to end on a real Temporal server (the run's dev server): an ENGINE=temporal API process, two
 * worker processes, PostgreSQL and a real SMTP server. Asserts on what arrives at the SMTP server and in the database.
 * The tests run in order, grouped by the send rate the workers run at (restarting the workers changes it); each one
 * leaves the delivery queue empty for the next.
 */
/** The sender domain of this file's campaigns: verified, without a DKIM key. */
const CAMPAIGN_DOMAIN = 'lists.example.net';

describeTemporal(__filename, 'Temporal cluster: API and worker processes on a real Temporal server', (temporal) => {
  const c = heraldCluster(temporal, { workerEnv: { SEND_RATE_PER_SECOND: '14' } });
  const key = () => bearer(c.project.secretKey);
  let dns: TestDnsServer;
  let resolver: Resolver;
  let selector: string;
  /** The worker processes started by the tests (the harness starts w1 and w2 before them). */
  const workers = new Map<string, ChildProcess>();

  beforeAll(async () => {
    // example.com gets its DKIM key as `domain add --verified` gives it one; the loopback DNS server publishes it.
    dns = await startDnsServer();
    resolver = new Resolver({ timeout: 1000, tries: 1 });
    resolver.setServers([dns.address]);
    const added = (await Domain.query(c.db.knex).findOne({ project_id: c.project.id, domain: 'example.com' }))!;
    const keyed = await ensureDomainKey(c.db.knex, TEST_SECRET, added);
    selector = keyed.dkimSelector!;
    dns.set(dkimRecordName('example.com', selector), { TXT: [dkimRecordValue(keyed.dkimPublicKey!)] });
    // The campaigns here are about the queue (exactly once, cancels, a killed worker), so they come from a verified
    // domain without a key: signing ~16,000 messages cost the workers ~56 of this file's CPU-seconds on two cores.
    // Signing is the /v1/send test's; test/domains/dkim.test.ts signs through the same deliverer.
    await addDomain(c.project.id, CAMPAIGN_DOMAIN, true);
  });
  afterAll(async () => {
    await dns?.close();
  });
  afterEach(() => c.smtp.script([]));

  // ---- helpers ----

  const counts = async (where: Record<string, unknown> = {}): Promise<Counts> => Object.fromEntries(
    (await c.db.knex('emails').where({ project_id: c.project.id, ...where }).groupBy('status').select('status').count('* as n'))
      .map((r) => [r.status as string, Number(r.n)]),
  );
  const campaignStatus = async (id: string) => (await c.db.knex('campaigns').where({ project_id: c.project.id, id }).first('status'))?.status as string;
  const to = (m: Received) => m.envelopeTo[0]!;
  /**
   * The received messages that match, found incrementally: the server's list only grows (past 13,000 messages here), and
   * the tests poll it every 10 ms while a campaign goes out; filtered whole at each poll, it cost 9 CPU-seconds.
   */
  const found = new Map<string, { scanned: number; matches: Received[] }>();
  const matching = (key: string, match: (m: Received) => boolean): Received[] => {
    let entry = found.get(key);
    if (!entry) found.set(key, (entry = { scanned: 0, matches: [] }));
    const all = c.smtp.received;
    for (; entry.scanned < all.length; entry.scanned++) if (match(all[entry.scanned]!)) entry.matches.push(all[entry.scanned]!);
    return entry.matches.slice(); // a snapshot, as a filter gave
  };
  const receivedBy = (address: string) => matching(`to ${address}`, (m) => to(m) === address);
  /** What the SMTP server has received of a campaign (its contacts are `<group>-<n>@example.org`). */
  const receivedOf = (group: string) => matching(`group ${group}`, (m) => to(m).startsWith(`${group}-`));

  /** Restarts both workers (SIGTERM, then new processes under the same executor ids) at this send rate. */
  async function runWorkers(rate: number): Promise<void> {
    await c.stopWorkers();
    for (const id of ['w1', 'w2']) workers.set(id, c.startWorker(id, { SEND_RATE_PER_SECOND: String(rate) }));
  }

  /** Waits until no email of the project is QUEUED or SENDING. */
  async function queueDrained(timeoutMs = 60_000): Promise<void> {
    await waitFor('the delivery queue to be empty', async () => {
      const k = await counts();
      return (k.QUEUED ?? 0) + (k.SENDING ?? 0) === 0 ? true : undefined;
    }, timeoutMs, 200);
  }

  const addContacts = (group: string, n: number) => addGroupContacts(c, group, n);

  /** Creates a campaign to the contacts of `group` through the API and sends it now; answers its id. */
  async function sendCampaignTo(group: string): Promise<string> {
    const created = await c.http().post('/campaigns').set(key()).send({
      name: group, subject: `News for ${group}`, body: '<p>Hello {{ email }}</p>', from: `news@${CAMPAIGN_DOMAIN}`, audienceType: 'FILTERED',
      audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: group }] }] },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const sent = await c.http().post(`/campaigns/${id}/send`).set(key()).send({});
    expect(sent.status).toBe(200);
    return id;
  }

  /** POST /v1/send of one email; answers its id. */
  async function send(address: string, subject = 'Hi'): Promise<string> {
    const res = await c.http().post('/v1/send').set(key()).send({ to: address, from: 'hi@example.com', subject, body: '<p>Hello</p>' });
    expect(res.status).toBe(200);
    return res.body.data.emails[0].email as string;
  }

  /** Sends one transactional email now; answers how long after the request it was accepted by the SMTP server. */
  async function transactionalArrivalMs(address: string): Promise<number> {
    const t0 = performance.now();
    await send(address, 'Urgent');
    const message = await waitFor(`${address} to arrive`, () => receivedBy(address)[0], 60_000, 10);
    return message.at - t0;
  }

  /** The campaign's workflow executions that Temporal's visibility lists as running (found by Herald's search attribute). */
  async function runningWorkflows(campaignId: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const w of c.client.workflow.list({ query: `HeraldCampaignId="${campaignId}" AND ExecutionStatus="Running"` })) ids.push(w.workflowId);
    return ids;
  }

  // ---- workers at the default 14/s ----

  test('the workers poll Temporal under their executor ids (Temporal UI names them so), not pid@host', async () => {
    await c.workersReady();
    const { TaskQueueType } = proto.api.enums.v1;
    const identities = async (type: proto.api.enums.v1.TaskQueueType) => (await c.client.workflowService.describeTaskQueue({
      namespace: temporal.namespace, taskQueue: { name: WORKFLOW_TASK_QUEUE }, taskQueueType: type,
    })).pollers?.map((p) => p.identity ?? '') ?? [];
    for (const type of [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY]) {
      const seen = await waitFor(`pollers w1 and w2 (${TaskQueueType[type]})`, async () => {
        const ids = await identities(type);
        return ids.includes('w1') && ids.includes('w2') ? ids : undefined;
      }, 30_000, 200);
      expect(seen.filter((id) => id.includes('@'))).toEqual([]);
    }
  }, 60_000);

  test('one pool, one engine, one rate: a worker of another ENGINE or SEND_RATE_PER_SECOND, or an API of another ENGINE, refuses to start, naming the difference', async () => {
    await c.workersReady(); // w1 and w2 live, at ENGINE=temporal and 14/s
    const [engine, rate, api] = await Promise.all([
      runHerald('bin/worker.ts', [], c.env({ EXECUTOR_ID: 'intruder-1', ENGINE: 'embedded', SEND_RATE_PER_SECOND: '14' })),
      runHerald('bin/worker.ts', [], c.env({ EXECUTOR_ID: 'intruder-2', SEND_RATE_PER_SECOND: '20' })),
      runHerald('bin/api.ts', [], c.env({ ENGINE: 'embedded', PORT: '0' })),
    ]);
    console.log(`refusals:\n${[engine, rate, api].map((r) => r.stderr.trim()).join('\n')}`);
    expect(engine.code).toBe(2);
    expect(engine.stderr).toMatch(/this database's workers run ENGINE=temporal at SEND_RATE_PER_SECOND=14 \(live: w1 .*w2 .*\); this process has ENGINE=embedded at SEND_RATE_PER_SECOND=14: ENGINE differs/);
    expect(rate.code).toBe(2);
    expect(rate.stderr).toMatch(/ENGINE=temporal at SEND_RATE_PER_SECOND=14 .*this process has ENGINE=temporal at SEND_RATE_PER_SECOND=20: SEND_RATE_PER_SECOND differs/);
    expect(api.code).toBe(2);
    expect(api.stderr).toMatch(/this process has ENGINE=embedded: ENGINE differs/);
    // Nothing of theirs stays: no claims, no registered ids, the cluster's settings unchanged.
    expect(Number((await c.db.knex('workers').whereIn('executor_id', ['intruder-1', 'intruder-2']).count('* as n').first())!.n)).toBe(0);
    expect(await c.db.knex('delivery_pace').where({ name: 'email' }).first('engine', 'send_rate_per_second')).toEqual({ engine: 'temporal', send_rate_per_second: 14 });
  }, 120_000);

  test('POST /v1/send is delivered once and DKIM-signed with the domain key', async () => {
    const before = c.smtp.received.length;
    const emailId = await send('ada@example.org');
    await c.smtp.waitFor(before + 1, 60_000);
    const row = await waitFor('SENT', async () => {
      const r = await c.db.knex('emails').where({ project_id: c.project.id, id: emailId }).first();
      return r?.status === 'SENT' ? r : undefined;
    });
    expect(row.message_id).toBe(`<${emailId}@example.com>`);
    await new Promise((r) => setTimeout(r, 500));
    const received = receivedBy('ada@example.org');
    expect(received).toHaveLength(1);
    expect(received[0]!.parsed.messageId).toBe(row.message_id);

    expect(received[0]!.raw.toString()).toMatch(/^DKIM-Signature: /m);
    const verified = await dkimVerify(received[0]!.raw, { resolver: (name: string, rrtype: string) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]> });
    expect(verified.results).toHaveLength(1);
    expect(verified.results[0]).toMatchObject({ signingDomain: 'example.com', selector, status: { result: 'pass' } });
  }, 90_000);

  test('an SMTP 4xx is retried and then delivered; a 5xx ends FAILED at once with the server\'s answer', async () => {
    c.smtp.script([{ code: 451, message: '4.3.0 Try again later' }]);
    const retried = await send('retry@example.org');
    const sent = await waitFor('the retried email SENT', async () => {
      const r = await c.db.knex('emails').where({ project_id: c.project.id, id: retried }).first();
      return r?.status === 'SENT' ? r : undefined;
    }, 60_000, 100);
    expect(sent.attempts).toBeGreaterThan(1);
    expect(sent.error).toBeNull();
    await new Promise((r) => setTimeout(r, 500));
    expect(receivedBy('retry@example.org')).toHaveLength(1);

    c.smtp.script([{ code: 550, message: '5.1.1 No such user' }]);
    const rejected = await send('nobody@example.org');
    const failed = await waitFor('the rejected email FAILED', async () => {
      const r = await c.db.knex('emails').where({ project_id: c.project.id, id: rejected }).first();
      return r?.status === 'FAILED' ? r : r?.status === 'SENT' ? r : undefined;
    }, 60_000, 100);
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toBe('550 5.1.1 No such user');
    expect(failed.attempts).toBe(1);
    const event = await c.db.knex('events').where({ project_id: c.project.id, email_id: rejected }).first();
    expect(event).toMatchObject({ name: 'email.failed', data: { error: '550 5.1.1 No such user' } });
    await new Promise((r) => setTimeout(r, 1500)); // longer than the first retry's backoff: no second attempt
    expect(receivedBy('nobody@example.org')).toHaveLength(0);
    expect((await c.db.knex('emails').where({ project_id: c.project.id, id: rejected }).first()).attempts).toBe(1);
  }, 120_000);

  test('the rate limit holds across two workers: at most 14 messages in any 1-s window, at least 12/s on average', async () => {
    // Timing is measured where it means something: at an SMTP server in a process of its own, whose event loop does
    // nothing else (the test's own server shares the Jest process, whose stalls would bunch its timestamps).
    const sink = await startSinkProcess();
    try {
      await c.stopWorkers();
      for (const w of ['w1', 'w2']) workers.set(w, c.startWorker(w, { SEND_RATE_PER_SECOND: '14', SMTP_URL: sink.url }));
      await c.workersReady(); // the steady state is measured, not the two workers' start-up
      const TOTAL = 500; // about 36 s at 14/s: the steady state, well past the two workers' first seconds
      await addContacts('paced', TOTAL);
      const id = await sendCampaignTo('paced');
      // Which workers claim mail while it goes out: the limit must hold for both together.
      const claimers = new Set<string>();
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          for (const r of await c.db.knex('emails').where({ project_id: c.project.id, campaign_id: id, status: 'SENDING' }).distinct('claimed_by')) claimers.add(r.claimed_by as string);
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      try {
        await waitFor(`${TOTAL} messages`, async () => ((await sink.received()).times.length >= TOTAL ? true : undefined), 180_000, 1000);
      } finally {
        sampling = false;
        await sampler;
      }
      const { times, recipients } = await sink.received();
      const at = [...times].sort((a, b) => a - b);
      let worst = 0;
      for (let i = 0, j = 0; i < at.length; i++) {
        while (at[j]! <= at[i]! - 1000) j++;
        worst = Math.max(worst, i - j + 1); // arrivals in the 1-s window that ends at at[i]
      }
      const seconds = (at[at.length - 1]! - at[0]!) / 1000;
      const mean = (at.length - 1) / seconds;
      console.log(`rate limit 14/s, 2 workers: ${at.length} messages in ${seconds.toFixed(1)} s, worst 1-s window ${worst}, mean ${mean.toFixed(2)}/s, claimed by ${[...claimers].sort().join(', ')}`);
      expect([...claimers].sort()).toEqual(['w1', 'w2']);
      expect(new Set(recipients).size).toBe(TOTAL);
      expect(worst).toBeLessThanOrEqual(14);
      // The limit is the upper bound above. This lower one only catches a limiter that starves (two workers that each
      // wait for the other would give 7/s): on a machine loaded by other test suites the two workers kept 12.95 and
      // 13.18/s, so a tight bound here measured the machine, not the limiter (BENCHMARKS.md section 3 measures the
      // accuracy on a quiet one); 10 leaves room for the load of the suite's three Jest workers.
      expect(mean).toBeGreaterThanOrEqual(10);
      await waitFor('campaign SENT', async () => ((await campaignStatus(id)) === 'SENT' ? true : undefined), 120_000, 500);
      expect(await counts({ campaign_id: id })).toEqual({ SENT: TOTAL });
    } finally {
      await runWorkers(14); // back to the test's own SMTP server
      sink.close();
    }
  }, 300_000);

  /**
   * Cancel means stop (issue 25): claimed emails waiting for their send slots are not sent once the cancel is answered,
   * by the API (its reply) or by a cancel of the workflow as Temporal UI makes it (the campaign CANCELLED in the
   * database). test/support/cancelStops.ts; the same on the embedded engine: test/cancelStops.test.ts.
   */
  const cancelHarness = () => ({ knex: c.db.knex, projectId: c.project.id, smtp: c.smtp, http: () => c.http(), key: key() });
  const apiCancel: CancelRun['cancel'] = async (id) => {
    const res = await c.http().post(`/campaigns/${id}/cancel`).set(key());
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('CANCELLED');
  };
  const workflowCancel: CancelRun['cancel'] = async (id) => {
    await c.client.workflow.getHandle(`campaign-${id}`).cancel();
    await waitFor('the campaign CANCELLED in the database', async () => ((await campaignStatus(id)) === 'CANCELLED' ? true : undefined), 30_000, 10);
  };

  test('cancel at 14/s through the API: at most the two sends handed to SMTP arrive after the answer', async () => {
    await c.workersReady(); // a worker's start takes a core for a second or two: not during the cancel
    await cancelMidFlight(cancelHarness(), { group: 'stop14-api', total: 60, after: 5, cancel: apiCancel, bound: 2 });
  }, 120_000);

  test('cancel at 14/s of the workflow, as Temporal UI does it: at most the two sends handed to SMTP arrive after the answer', async () => {
    await c.workersReady(); // a worker's start takes a core for a second or two: not during the cancel
    await cancelMidFlight(cancelHarness(), { group: 'stop14-ui', total: 60, after: 5, cancel: workflowCancel, bound: 2 });
  }, 120_000);

  // ---- workers at 5000/s ----

  test('a campaign to 10,000 contacts is delivered exactly once', async () => {
    const TOTAL = 10_000;
    await runWorkers(5000);
    await addContacts('bulk', TOTAL);
    const id = await sendCampaignTo('bulk');
    const started = Date.now();
    // A liveness bound (bench/campaign.ts measures speed): a loaded machine has taken minutes.
    await waitFor('campaign SENT', async () => ((await campaignStatus(id)) === 'SENT' ? true : undefined), 600_000, 500);
    const mail = receivedOf('bulk');
    console.log(`10,000-contact campaign: SENT after ${((Date.now() - started) / 1000).toFixed(1)} s, ${mail.length} messages received`);
    expect(new Set(mail.map(to)).size).toBe(TOTAL);
    expect(mail).toHaveLength(TOTAL);
    expect(await counts({ campaign_id: id })).toEqual({ SENT: TOTAL });
    expect((await c.db.knex('campaigns').where({ project_id: c.project.id, id }).first()).total_recipients).toBe(TOTAL);
  }, 660_000);

  // ---- workers at 200/s ----

  test('a worker SIGKILLed mid-campaign and restarted with the same EXECUTOR_ID: nothing lost, duplicates at most its unrecorded sends', async () => {
    const TOTAL = 2000;
    await runWorkers(200);
    await addContacts('killed', TOTAL);
    const id = await sendCampaignTo('killed');
    await waitFor('a quarter of the campaign delivered', () => (receivedOf('killed').length >= TOTAL / 4 ? true : undefined), 120_000, 10);
    const victim = workers.get('w1')!;
    killGroup(victim, 'SIGKILL');
    await exited(victim);
    // The dead worker's claims: sent or not, unrecorded; they are what may arrive twice.
    const inFlight = Number((await c.db.knex('emails').where({ project_id: c.project.id, campaign_id: id, status: 'SENDING', claimed_by: 'w1' }).count('* as n').first())!.n);
    const allSending = (await counts({ campaign_id: id })).SENDING ?? 0;
    const deliveredAtKill = receivedOf('killed').length;
    expect(deliveredAtKill).toBeLessThan(TOTAL);

    workers.set('w1', c.startWorker('w1', { SEND_RATE_PER_SECOND: '200' }));
    await waitFor(`all ${TOTAL} emails SENT`, async () => ((await counts({ campaign_id: id })).SENT === TOTAL ? true : undefined), 180_000, 200);
    const mail = receivedOf('killed');
    const recipients = new Set(mail.map(to));
    const duplicates = mail.length - recipients.size;
    console.log(`SIGKILL: killed after ${deliveredAtKill}/${TOTAL} delivered, ${inFlight} claimed by the killed worker (${allSending} SENDING in all); ${recipients.size} recipients received, ${duplicates} duplicate(s) (bound ${MAX_UNRECORDED})`);
    expect(recipients.size).toBe(TOTAL);
    // Of its claims, only the sends between SMTP's answer and the commit of their outcomes can arrive twice, and a worker
    // has at most MAX_UNRECORDED of those (worker/deliveryQueue.ts): the same queue as on the embedded engine.
    expect(duplicates).toBeLessThanOrEqual(Math.min(inFlight, MAX_UNRECORDED));
    // A resent duplicate carries the same Message-ID, so the receiver can drop it.
    expect(new Set(mail.map((m) => m.parsed.messageId)).size).toBe(TOTAL);
    await waitFor('campaign SENT', async () => ((await campaignStatus(id)) === 'SENT' ? true : undefined), 120_000, 500);
    expect(await counts({ campaign_id: id })).toEqual({ SENT: TOTAL });
  }, 300_000);

  /**
   * A campaign of 1,000 at 200/s cancelled by `cancel` once some of it is out. Checks what the issue asks of every cancel
   * and answers the campaign's id.
   */
  async function cancelMidSend(group: string, cancel: (campaignId: string) => Promise<void>): Promise<string> {
    const TOTAL = 1000;
    await addContacts(group, TOTAL);
    const id = await sendCampaignTo(group);
    // Found by its search attribute while it runs (so that "none running" below is not true of a workflow never found).
    await waitFor('the campaign workflow listed as running', async () => ((await runningWorkflows(id)).length === 1 ? true : undefined), 30_000, 200);
    await waitFor('some of the campaign delivered', () => (receivedOf(group).length >= 100 ? true : undefined), 60_000, 10);
    await cancel(id);
    const cancelledAt = Date.now();
    const within10s = () => Math.max(0, cancelledAt + 10_000 - Date.now());
    await waitFor('the campaign CANCELLED in the database', async () => ((await campaignStatus(id)) === 'CANCELLED' ? true : undefined), within10s(), 20);
    // In this order: what is SENDING now is all of the campaign that can still reach the server.
    const sendingAtCancel = (await counts({ campaign_id: id })).SENDING ?? 0;
    const receivedAtCancel = receivedOf(group).length;

    const arrivalMs = await transactionalArrivalMs(`after-${group}@example.org`);
    await waitFor('no campaign email QUEUED or SENDING', async () => {
      const k = await counts({ campaign_id: id });
      return (k.QUEUED ?? 0) + (k.SENDING ?? 0) === 0 ? true : undefined;
    }, within10s(), 50);
    await waitFor('no running workflow of the campaign', async () => ((await runningWorkflows(id)).length === 0 ? true : undefined), within10s(), 200);

    const mail = receivedOf(group);
    const final = await counts({ campaign_id: id });
    console.log(`cancel (${group}): ${receivedAtCancel} of ${TOTAL} delivered at the cancel, ${sendingAtCancel} SENDING, ${mail.length - receivedAtCancel} delivered after it; transactional mail after the cancel arrived in ${Math.round(arrivalMs)} ms`);
    expect(mail.length - receivedAtCancel).toBeLessThanOrEqual(sendingAtCancel);
    // Liveness, not speed: the cancel leaves the delivery queue flowing, so the mail arrives within the cancel's own
    // 10-s window (the deliveries in flight at the cancel go first; 1.5-4.3 s seen on a loaded CI machine).
    expect(arrivalMs).toBeLessThanOrEqual(10_000);
    expect(new Set(mail.map(to)).size).toBe(mail.length);
    expect(final).toEqual({ SENT: mail.length, CANCELLED: TOTAL - mail.length });
    expect(mail.length).toBeLessThan(TOTAL);
    expect(await campaignStatus(id)).toBe('CANCELLED');
    await queueDrained();
    return id;
  }

  test('cancel mid-send through the API: CANCELLED, nothing sent beyond the deliveries in flight, workflow closed, transactional mail flows', async () => {
    await cancelMidSend('cancel-api', async (id) => {
      const res = await c.http().post(`/campaigns/${id}/cancel`).set(key());
      expect(res.status).toBe(200);
      expect(res.body.data.status).toBe('CANCELLED');
    });
  }, 180_000);

  test('cancel mid-send with the Temporal CLI as Temporal UI does it: the same database state, and the workflow ends Canceled', async () => {
    const cli = temporalCli.findTemporal();
    expect(cli).toBeDefined();
    const id = await cancelMidSend('cancel-ui', async (campaignId) => {
      await run(cli!, ['workflow', 'cancel', '--address', temporal.address, '--namespace', temporal.namespace, '--workflow-id', `campaign-${campaignId}`], { timeout: 60_000 });
    });
    expect((await c.client.workflow.getHandle(`campaign-${id}`).describe()).status.name).toBe('CANCELLED');
  }, 180_000);

  test('a 451 to in-flight campaign mail during the cancel: those emails end CANCELLED, not QUEUED', async () => {
    const TOTAL = 1000;
    await addContacts('cancel-451', TOTAL);
    const id = await sendCampaignTo('cancel-451');
    await waitFor('some of the campaign delivered', () => (receivedOf('cancel-451').length >= 100 ? true : undefined), 60_000, 10);
    // From now on the server answers 451 to every message: whatever is in flight fails transiently.
    c.smtp.script(Array.from({ length: 100_000 }, () => ({ code: 451, message: '4.7.1 Try again later' })));
    const res = await c.http().post(`/campaigns/${id}/cancel`).set(key());
    expect(res.status).toBe(200);
    const inFlight: string[] = await c.db.knex('emails').where({ project_id: c.project.id, campaign_id: id, status: 'SENDING' }).pluck('id');
    await waitFor('no campaign email QUEUED or SENDING', async () => {
      const k = await counts({ campaign_id: id });
      return (k.QUEUED ?? 0) + (k.SENDING ?? 0) === 0 ? true : undefined;
    }, 10_000, 50);
    c.smtp.script([]);
    const rows: { id: string; status: string; error: string | null }[] = await c.db.knex('emails').whereIn('id', inFlight).select('id', 'status', 'error');
    const final = await counts({ campaign_id: id });
    const mail = receivedOf('cancel-451');
    console.log(`cancel with 451s: ${inFlight.length} in flight at the cancel → ${JSON.stringify(Object.fromEntries(['SENT', 'CANCELLED', 'QUEUED'].map((s) => [s, rows.filter((r) => r.status === s).length])))}; campaign ${JSON.stringify(final)}`);
    expect(inFlight.length).toBeGreaterThan(0);
    // Each one either went out before the 451s began, or failed transiently after the cancel and is CANCELLED.
    for (const r of rows) expect(['SENT', 'CANCELLED']).toContain(r.status);
    expect(rows.filter((r) => r.status === 'CANCELLED' && r.error === 'the campaign was cancelled').length).toBeGreaterThan(0);
    expect(final).toEqual({ SENT: mail.length, CANCELLED: TOTAL - mail.length });
    expect(await campaignStatus(id)).toBe('CANCELLED');
    await waitFor('no running workflow of the campaign', async () => ((await runningWorkflows(id)).length === 0 ? true : undefined), 10_000, 200);
  }, 180_000);

  // ---- workers at 2/s ----

  test('priority: at 2/s, a /v1/send behind a sending campaign goes out ahead of the queued campaign emails', async () => {
    await runWorkers(2);
    await addContacts('slow', 40);
    const id = await sendCampaignTo('slow');
    await waitFor('the campaign sending', () => (receivedOf('slow').length >= 2 ? true : undefined), 120_000, 20);
    const queued = (await counts({ campaign_id: id })).QUEUED ?? 0;
    const requested = performance.now();
    const urgentId = await send('urgent@example.org', 'Urgent');
    // Counted from the acknowledgment, when the email is queued (the emails table is the queue): the request itself
    // may take seconds on a loaded machine (a fresh-clone run answered it late and saw 6 go out meanwhile, arriving
    // 5.4 s after the request), while the campaign goes on at its rate.
    const acknowledged = performance.now();
    // What the workers had claimed of the campaign then (SENDING): booked slots, up to a second ahead at this rate.
    const claimedAtAck = (await counts({ campaign_id: id })).SENDING ?? 0;
    const urgentAt = (await waitFor('urgent@example.org to arrive', () => receivedBy('urgent@example.org')[0], 60_000, 10)).at;
    // Order, not time (a loaded machine stretches every second): between the acknowledgment and its arrival only these
    // campaign emails may go out: those already claimed then (SENDING: their slots were booked, up to a second ahead),
    // and one claim of the other worker, taken while the urgent one's claim was under way (SKIP LOCKED passes it by) or
    // after it, but sent over its own SMTP connection while the urgent one's worker is slower to send: at most a
    // second's slots and one more, 3 at this rate. A queue without priority would send all the queued ones first (33
    // in a fresh-clone run at load, where 8 went out first with the claims of a slowed machine; alone, 2-3 of 3).
    const overtaking = receivedOf('slow').filter((m) => m.at > acknowledged && m.at <= urgentAt).length;
    const urgent = await c.db.knex('emails').where({ project_id: c.project.id, id: urgentId }).first('attempts', 'error', 'status');
    console.log(`priority at 2/s: transactional mail acknowledged ${Math.round(acknowledged - requested)} ms after the request, arrived ${Math.round(urgentAt - acknowledged)} ms after that, ahead of ${queued} queued campaign emails; ${overtaking} campaign emails went out meanwhile, ${claimedAtAck} claimed at the acknowledgment; the urgent one ${JSON.stringify(urgent)}`);
    expect(queued).toBeGreaterThan(20);
    expect(overtaking).toBeLessThanOrEqual(claimedAtAck + 3);
    expect(overtaking).toBeLessThan(queued / 2);
    expect(receivedBy('urgent@example.org')).toHaveLength(1);
    // Clean up: the rest of the campaign is cancelled.
    expect((await c.http().post(`/campaigns/${id}/cancel`).set(key())).status).toBe(200);
    await queueDrained();
  }, 180_000);

  test('cancel at 2/s through the API: at most the one send handed to SMTP arrives after the answer', async () => {
    // Every worker restarted at 2/s (runWorkers): that is how an operator changes the cluster's rate.
    expect(await c.db.knex('delivery_pace').where({ name: 'email' }).first('engine', 'send_rate_per_second')).toEqual({ engine: 'temporal', send_rate_per_second: 2 });
    await c.workersReady(); // a worker's start takes a core for a second or two: not during the cancel
    await cancelMidFlight(cancelHarness(), { group: 'stop2-api', total: 12, after: 2, cancel: apiCancel, bound: 1 });
  }, 120_000);

  test('cancel at 2/s of the workflow, as Temporal UI does it: at most the one send handed to SMTP arrives after the answer', async () => {
    await c.workersReady(); // a worker's start takes a core for a second or two: not during the cancel
    await cancelMidFlight(cancelHarness(), { group: 'stop2-ui', total: 12, after: 2, cancel: workflowCancel, bound: 1 });
  }, 120_000);
});
