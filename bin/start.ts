// `npm start`: Herald in one process (API + worker) with its embedded defaults.
import { main } from './runtime';

main({ api: true, worker: true });
