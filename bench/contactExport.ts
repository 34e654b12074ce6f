/**
 * Contact export at scale (issue 30, "Performance"): BENCH_CONTACTS contacts (default 1,000,000) with 5 data columns,
 * exported through the API (GET /contacts/export, CSV, the record's email, subscribed and createdAt and the five
 * data.* columns, read by this script as fast as it can) beside the floor: `COPY (the same SELECT) TO STDOUT` of the
 * same rows by this process on its own connection, in the same run. The bar: the API ≥ 0.5 × the floor's rows per
 * second. BENCH_ROUNDS rounds (default 3), alternating which goes first; medians reported.
 *
 *   npx tsx bench/contactExport.ts          (npm run bench:contact-export)
 *
 * The API runs in a child (a real Herald API process, as `npm run api`); the floor in this process, with
 * pg-copy-streams reading the socket as the API does. Both count bytes and lines; the rows must agree.
 *
 * Environment: BENCH_CONTACTS, BENCH_ROUNDS, BENCH_LOG_LEVEL (default warn), BENCH_JSON=file.
 */
import fs from 'node:fs';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { createProject } from '../projects/service';
import { startCluster } from './lib/cluster';
import { startHeraldChild } from './lib/herald';
import { freePort, machine, runBench, type Child } from './lib/proc';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const COLUMNS = 'email,subscribed,createdAt,data.plan,data.seats,data.city,data.company,data.signedUpAt';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** Reads a stream of bytes to its end: how many bytes and lines, and how long. */
async function drain(chunks: AsyncIterable<Buffer>): Promise<{ bytes: number; lines: number; ms: number }> {
  const start = performance.now();
  let bytes = 0;
  let lines = 0;
  for await (const c of chunks) {
    bytes += c.length;
    for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) lines++;
  }
  return { bytes, lines, ms: performance.now() - start };
}

runBench('bench:contact-export', 60 * 60_000, async () => {
  const cluster = await startCluster('contact-export');
  const children: Child[] = [];
  try {
    const project = await createProject('Export bench');
    console.log(`seeding ${CONTACTS.toLocaleString('en')} contacts with 5 data columns…`);
    const seedStart = performance.now();
    await cluster.knex.raw(
      `INSERT INTO contacts (project_id, email, subscribed, data)
       SELECT ?::uuid, 'person' || i || '@example.com', i % 10 <> 0,
              jsonb_build_object('plan', (ARRAY['free', 'pro', 'team'])[1 + i % 3], 'seats', i % 50, 'city', 'City ' || (i % 1000),
                                 'company', 'Company "' || (i % 5000) || '", Ltd', 'signedUpAt', '2026-0' || (1 + i % 9) || '-15T10:00:00Z')
       FROM generate_series(1, ?) AS i`, [project.id, CONTACTS]);
    await cluster.knex.raw('VACUUM ANALYZE contacts');
    console.log(`seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

    const port = await freePort();
    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
    children.push(herald);
    await herald.ready;

    // The floor: the statement the API runs (its SELECT, as the export builds it), copied straight to this process.
    const floorSql = `SELECT c.email AS "email", c.subscribed::text AS "subscribed",
        to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
        c.data #>> '{plan}' AS "data.plan", c.data #>> '{seats}' AS "data.seats", c.data #>> '{city}' AS "data.city",
        c.data #>> '{company}' AS "data.company", c.data #>> '{signedUpAt}' AS "data.signedUpAt"
      FROM contacts c WHERE c.project_id = '${project.id}' ORDER BY c.id`;
    const floor = async () => {
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      try {
        return await drain(client.query(copyTo(`COPY (${floorSql}) TO STDOUT WITH (FORMAT csv, HEADER true)`)));
      } finally {
        await client.end();
      }
    };
    const viaApi = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/contacts/export?format=csv&columns=${COLUMNS}`, { headers: { authorization: `Bearer ${project.secretKey}` } });
      if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}: ${await res.text()}`);
      return drain(res.body as unknown as AsyncIterable<Buffer>);
    };

    const api: number[] = [];
    const copy: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ['api', 'copy'] as const : ['copy', 'api'] as const;
      for (const which of order) {
        const r = which === 'api' ? await viaApi() : await floor();
        if (r.lines !== CONTACTS + 1) throw new Error(`${which} gave ${r.lines} lines, not ${CONTACTS + 1}`);
        (which === 'api' ? api : copy).push(r.ms);
        console.log(`round ${round + 1} ${which.padEnd(4)} ${(r.ms / 1000).toFixed(2)} s  ${(r.bytes / 1e6).toFixed(1)} MB  ${Math.round(CONTACTS / (r.ms / 1000)).toLocaleString('en')} rows/s`);
      }
    }
    const apiMs = median(api);
    const copyMs = median(copy);
    const result = {
      contacts: CONTACTS, rounds: ROUNDS, columns: COLUMNS,
      apiRowsPerSecond: Math.round(CONTACTS / (apiMs / 1000)), copyRowsPerSecond: Math.round(CONTACTS / (copyMs / 1000)),
      ratio: Number((copyMs / apiMs).toFixed(2)), machine: machine(cluster.version),
    };
    console.log(`\nexport via the API: ${result.apiRowsPerSecond.toLocaleString('en')} rows/s (median of ${ROUNDS}); COPY TO STDOUT: ${result.copyRowsPerSecond.toLocaleString('en')} rows/s`);
    console.log(`API ÷ COPY: ${result.ratio} (the bar: ≥ 0.5)`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify(result, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await cluster.stop();
  }
});
