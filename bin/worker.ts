// `npm run worker`: workflows and deliveries only; run as many as you need.
import { main } from './runtime';

main({ api: false, worker: true });
