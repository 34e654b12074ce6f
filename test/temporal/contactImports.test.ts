import { bearer } from '../support/app';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';
import { temporal as proto } from '@temporalio/proto';
import { HEARTBEAT } from '../../workflows/policy';

/**
 * Contact imports on the cluster engine: an ENGINE=temporal API process stores the file, a worker process runs the
 * importContacts workflow on a real Temporal server. A cancel from Temporal (as Temporal UI's) leaves the rows an API
 * cancel leaves: CANCELLED, the file deleted, the rows merged so far kept.
 */
describeTemporal(__filename, 'Temporal: contact imports as workflows', (temporal) => {
  const c = heraldCluster(temporal, { workers: 1 });
  const key = () => bearer(c.project.secretKey);
  const upload = (file: string) => c.http().post('/contacts/imports').set(key()).set('Content-Type', 'text/csv')
    .query({ columns: JSON.stringify([{ column: 'email', to: 'email' }, { column: 'plan', to: 'data', key: 'plan' }]) }).send(Buffer.from(file));
  const progress = async (id: string) => (await c.http().get(`/contacts/imports/${id}`).set(key())).body.data;

  test('a file with bad rows: the good rows imported in batches by the workflow, the bad ones refused with their line', async () => {
    // The duplicate is in the second batch (IMPORT_BATCH_ROWS): refused by the merge, with the line the first batch took.
    const rows = Array.from({ length: 24_000 }, (_, i) => (i === 100 ? 'broken,"x"y' : i === 21_000 ? 'tmp0@example.com,dup' : `tmp${i}@example.com,p${i % 4}`));
    const res = await upload(['email,plan', ...rows].join('\n'));
    expect(res.status).toBe(202);
    const done = await waitFor('the import COMPLETED', async () => {
      const p = await progress(res.body.data.id);
      return p.status === 'COMPLETED' ? p : undefined;
    }, 90_000, 200);
    expect(done.rows).toEqual({ read: 24_000, created: 23_998, updated: 0, skipped: 0, failed: 2 });
    const errors = await c.db.knex('contact_import_errors').where('import_id', res.body.data.id).orderBy('line').select('line', 'reason');
    expect(errors).toEqual([
      { line: 102, reason: expect.stringContaining('broken quote') },
      { line: 21_002, reason: 'duplicate email: the file has it on line 2 already' },
    ]);
    expect(Number((await c.db.knex('contacts').where('project_id', c.project.id).count('* as n').first())!.n)).toBe(23_998);
    // The import's row is COMPLETED by the workflow's last activity; the workflow itself ends just after that answers.
    const handle = c.client.workflow.getHandle(`contact-import-${res.body.data.id}`);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });

  test('cancelled in Temporal (as from its UI): CANCELLED, the file deleted, the rows merged so far kept', async () => {
    const res = await upload(['email,plan', ...Array.from({ length: 60_000 }, (_, i) => `ui${i}@example.com,p`)].join('\n'));
    const id = res.body.data.id;
    await waitFor('a first batch', async () => ((await progress(id)).rows.read > 0 ? true : undefined), 60_000, 20);
    await c.client.workflow.getHandle(`contact-import-${id}`).cancel();
    const ended = await waitFor('the import CANCELLED', async () => {
      const p = await progress(id);
      return p.status === 'CANCELLED' ? p : undefined;
    }, 60_000, 100);
    expect(ended.rows.read).toBeLessThan(60_000);
    expect(Number((await c.db.knex('contacts').where('project_id', c.project.id).where('email', 'like', 'ui%').count('* as n').first())!.n)).toBe(ended.rows.created);
    expect(await c.db.knex('contact_import_chunks').where('import_id', id).first()).toBeUndefined();
  });

  test('the worker SIGKILLed during a batch: its heartbeat stops, the batch is retried within seconds, every row imported once', async () => {
    const total = 60_000;
    const res = await upload(['email,plan', ...Array.from({ length: total }, (_, i) => `kill${i}@example.com,p`)].join('\n'));
    const id = res.body.data.id;
    await waitFor('a first batch', async () => ((await progress(id)).rows.read > 0 ? true : undefined), 60_000, 20);
    // A batch held in flight: the import's row locked here, the worker's next batch waits for it (a batch is too quick
    // to be caught otherwise), and is killed while it waits.
    const lock = await c.db.knex.transaction();
    await lock('contact_imports').where('id', id).forUpdate().first();
    const handle = c.client.workflow.getHandle(`contact-import-${id}`);
    // In flight means waiting on that lock in PostgreSQL (a batch seen STARTED may be one that just finished: then the
    // next would start after the kill, on the new worker, and nothing would be retried).
    const waiting = async () => Number((await c.db.knex.raw(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`)).rows[0].n);
    await waitFor('a batch in flight, waiting for the import\'s row', async () => ((await waiting()) > 0 && ((await handle.describe()).raw.pendingActivities ?? [])
      .some((a) => a.activityType?.name === 'importBatch' && a.state === proto.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED)) || undefined, 30_000, 50);
    await c.stopWorkers('SIGKILL');
    const killedAt = Date.now();
    await lock.commit();
    expect((await progress(id)).rows.read).toBeLessThan(total);
    c.startWorker('w1');
    await c.workersReady();
    // A liveness bound (the heartbeat timeout is what the test checks, below): 60,000 rows took over 90 s on a
    // machine at load 15.
    const done = await waitFor('the import COMPLETED', async () => {
      const p = await progress(id);
      return p.status === 'COMPLETED' ? p : undefined;
    }, 240_000, 200);
    console.log(`import completed ${Math.round((Date.now() - killedAt) / 1000)} s after the worker was killed`);
    expect(done.rows).toEqual({ read: total, created: total, updated: 0, skipped: 0, failed: 0 });
    const [{ n, distinct }] = await c.db.knex('contacts').where('project_id', c.project.id).where('email', 'like', 'kill%')
      .select(c.db.knex.raw('count(*)::int AS n'), c.db.knex.raw('count(DISTINCT email)::int AS distinct'));
    expect({ n, distinct }).toEqual({ n: total, distinct: total });
    // The batch the killed worker held was retried because its heartbeats stopped, not after the minute's start-to-close.
    const events = (await handle.fetchHistory()).events ?? [];
    const retried = events.map((e) => e.activityTaskStartedEventAttributes).filter((a) => a && (a.attempt ?? 1) > 1);
    expect(retried.length).toBeGreaterThan(0);
    expect(retried[0]!.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(proto.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT);
    const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'importBatch')!.activityTaskScheduledEventAttributes!;
    expect(Number(scheduled.heartbeatTimeout!.seconds)).toBe(HEARTBEAT.timeoutMs / 1000);
  }, 330_000);
});
