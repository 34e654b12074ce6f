// `npm start`: Herald in one process with its embedded defaults (PostgreSQL under DATA_DIR unless DATABASE_URL is set).
import { configOrExit, startApi, stopOnSignals } from './runtime';

const config = configOrExit();
startApi(config).then(stopOnSignals, (err: Error) => {
  console.error(`Herald failed to start: ${err.message}`);
  process.exit(1);
});
