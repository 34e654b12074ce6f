/**
 * The floor of bench/send.ts: a bare Koa app on the same database with the same knex pool settings as Herald
 * (createKnex, 10 connections). Its one route parses the same JSON body and does one INSERT in a transaction
 * (BEGIN; INSERT … RETURNING id; COMMIT) into a scratch table, then answers with the id.
 */
import type { AddressInfo } from 'node:net';
import { bodyParser } from '@koa/bodyparser';
import Koa from 'koa';
import { createKnex } from '../../db/database';

const knex = createKnex(process.env.DATABASE_URL!, { applicationName: 'herald-bench-floor' });
const app = new Koa();
app.use(bodyParser({ enableTypes: ['json'] }));
app.use(async (ctx) => {
  if (ctx.method !== 'POST' || ctx.path !== '/v1/send') { ctx.status = 404; return; }
  const body = ctx.request.body as { to: string; subject: string; body: string };
  const [row] = await knex.transaction((trx) => trx('bench_floor').insert({ to_email: body.to, subject: body.subject, html: body.body }).returning('id'));
  ctx.body = { success: true, data: { id: (row as { id: string }).id } };
});
const server = app.listen(0, '127.0.0.1', () => {
  process.send!({ type: 'ready', port: (server.address() as AddressInfo).port });
});
process.once('SIGTERM', () => {
  server.close(() => { void knex.destroy().then(() => process.exit(0)); });
});
