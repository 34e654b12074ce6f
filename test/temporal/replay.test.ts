import fs from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { temporal as proto } from '@temporalio/proto';

/**
 * Every recorded workflow history (test/temporal/histories/, recorded on a real server by histories.test.ts) replays
 * against the workflow code as it is now, offline, in every run. A change to workflows/ that would break an execution
 * already running (a campaign mid-send, an automation in a 7-day wait) fails here; such a change goes behind
 * ctx.patched('<change-id>'), which keeps the old path for old histories (README, "Changing workflows").
 *
 * Histories are loaded with the proto's own fromObject: @temporalio/common's historyFromJSON fails with this lock file,
 * which holds protobufjs 7 (for @grpc/proto-loader) beside 8 (for Temporal's protos).
 */
const HISTORIES = path.join(__dirname, 'histories');
const files = fs.readdirSync(HISTORIES).filter((f) => f.endsWith('.json')).sort();
const load = (file: string) => {
  const { workflowId, history } = JSON.parse(fs.readFileSync(path.join(HISTORIES, file), 'utf8')) as { workflowId: string; history: object };
  return { workflowId, history: proto.api.history.v1.History.fromObject(history) };
};
const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
/** workflows/temporal.ts bundled once (as a Worker's workflowsPath would be), for every replay of the current code. */
let current: { code: string };
beforeAll(async () => {
  try {
    Runtime.install({ shutdownSignals: [], logger: new DefaultLogger('WARN') }); // no line per replay worker's state change
  } catch {
    // installed already
  }
  current = { code: (await bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows/temporal'), logger: silent })).code };
}, 120_000);

test('there are recorded histories of every workflow type', () => {
  expect(files).toEqual(expect.arrayContaining(['campaign-sent.json', 'campaign-cancelled.json', 'campaign-failed.json', 'campaign-ab-winner.json', 'campaign-ab-cancelled.json', 'automation-delay.json', 'automation-event.json', 'automation-timeout.json', 'automation-timers.json', 'domain-checks.json']));
});

test.each(files)('%s replays against the current workflows/', async (file) => {
  const { workflowId, history } = load(file);
  await expect(Worker.runReplayHistory({ workflowBundle: current, replayName: file }, history, workflowId)).resolves.toBeUndefined();
}, 60_000);

test('the check has teeth: a campaign history does not replay against an incompatible edit of the campaign workflow', async () => {
  const { workflowId, history } = load('campaign-sent.json');
  const replay = Worker.runReplayHistory({ workflowsPath: require.resolve('./fixtures/changedSendCampaign'), replayName: 'changed' }, history, workflowId);
  await expect(replay).rejects.toBeInstanceOf(DeterminismViolationError);
  // For the reason the edit introduced: the recorded first activity against the edit's.
  await expect(replay).rejects.toThrow(/'beginCampaign' does not match activity type of activity command 'campaignProgress'/);
}, 60_000);
