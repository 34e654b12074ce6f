import { parentPort, workerData } from 'node:worker_threads';
import type { DnsConfig } from '../config';
import { authenticator } from './auth';
import { parseMessage } from './parse';

/**
 * A thread of inbound/analysis.ts: parses and authenticates the messages it is handed (the same code as in the
 * listener's thread: inbound/parse.ts, inbound/auth.ts with its own DNS cache) and answers the results.
 */

const { dns, mta } = workerData as { dns: DnsConfig; mta: string };
const authenticate = authenticator(dns, mta);

parentPort!.on('message', ({ id, raw, session }: { id: number; raw: Uint8Array; session: { ip: string; helo: string; sender: string } }) => {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  Promise.all([parseMessage(bytes), authenticate(bytes, session)]).then(([parsed, auth]) => {
    parentPort!.postMessage({ id, parsed, auth });
  }, (err: Error) => parentPort!.postMessage({ id, error: err.message }));
});
