// `npm run api`: the HTTP API only (workers run elsewhere: `npm run worker`).
import { main } from './runtime';

main({ api: true, worker: false });
