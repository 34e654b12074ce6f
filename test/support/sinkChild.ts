/**
 * An SMTP sink in a process of its own (bench/lib/sink.ts: accepts at once, records the acceptance time of each
 * message), for tests that measure timing at the receiving end: the Jest process's own event loop (parsing mail,
 * querying the database) would delay and bunch the timestamps of a sink inside it.
 */
import { startSink } from '../../bench/lib/sink';

void startSink().then((sink) => {
  process.on('message', (m: { type?: string }) => {
    if (m.type === 'times') process.send!({ type: 'times', times: sink.times, recipients: sink.recipients });
  });
  process.send!({ type: 'ready', url: sink.url });
});
