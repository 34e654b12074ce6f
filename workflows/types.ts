/**
 * What workflows and activities exchange. Workflows carry ids, never payloads: state lives in PostgreSQL.
 * (An automation's steps are the one exception: an execution keeps the definition it started with.)
 */
import type { ExecutionStatus, Step } from '../automations/steps';

export type { ExecutionStatus, Step };

export interface CampaignRef {
  projectId: string;
  campaignId: string;
}

export type CampaignPhase = 'DRAFT' | 'SCHEDULED' | 'SENDING' | 'SENT' | 'CANCELLED' | 'FAILED';

/** The input of the sendCampaign workflow (not the API's campaign body, campaigns/campaigns.ts CampaignInput). */
export interface SendCampaignInput extends CampaignRef {
  /** Keyset position: the last contact id of the previous run (continue-as-new). */
  after?: string | null;
  /** Every batch is stored: a continued run only waits for the deliveries. */
  draining?: boolean;
  /**
   * An A/B campaign (it has variants and a test, campaigns/abTest.ts), and where its run goes on from: the sample's
   * batches, the wait for the winner, or the rest's batches (then `after` and `draining` are the rest's).
   * Absent: a plain campaign.
   */
  test?: AbStage;
}

/** The parts of an A/B campaign's work, in order (workflows/sendCampaign.ts). */
export type AbStage = 'sample' | 'wait' | 'rest';

/** Which emails a campaign batch queues: a plain campaign's (absent), an A/B campaign's sample, or its rest. */
export type BatchPart = 'sample' | 'rest';

/**
 * Where an A/B campaign's wait for its winner stands, as the database decides it: WAITING (`remainingMs` null: a
 * manual test past its wait, waiting for a person's choice), READY (a winner can be decided: the wait is over, or a
 * person chose one), or CANCELLED (the campaign is no longer sending).
 */
export type TestWaitState =
  | { state: 'WAITING'; remainingMs: number | null }
  | { state: 'READY' }
  | { state: 'CANCELLED' };

/**
 * Every engine workflow's input, by name (workflows/registry.ts holds their code). Here, with the other types, so
 * that the context a workflow is written against does not import the registry that imports the workflows.
 */
export interface WorkflowInputs {
  sendCampaign: SendCampaignInput;
  checkDomains: CheckDomainsInput;
  runAutomation: RunAutomationInput;
  importContacts: ImportContactsInput;
  applyRetention: RetentionInput;
}

/** Input of a run of the retention job: on engines without schedules (DBOS), its slot (epoch ms), from which it starts the next slot's run. */
export interface RetentionInput {
  slot?: number;
}

/** What a run of the retention job did: partitions created, dropped (names), rows deleted one by one. */
export interface RetentionRunResult {
  created: number;
  dropped: string[];
  deleted: number;
}

export type WorkflowName = keyof WorkflowInputs;

export interface BatchResult {
  /** The campaign is no longer SENDING (cancelled): stop. */
  cancelled: boolean;
  inserted: number;
  /** Keyset position: the last contact id of this batch. */
  last: string | null;
  /** The audience is exhausted. */
  done: boolean;
}

/**
 * Input of a run of the periodic domain re-check: the keyset position after continue-as-new, and on engines without
 * schedules (DBOS) the run's slot (epoch ms), from which it starts the next slot's run. A run started by a Temporal
 * Schedule has no slot: the schedule starts the next one.
 */
export interface CheckDomainsInput {
  slot?: number;
  after?: string | null;
}

export interface DomainBatchResult {
  checked: number;
  verified: number;
  failed: number;
  /** Keyset position: the last domain id of this batch. */
  last: string | null;
  /** Every domain has been checked. */
  done: boolean;
}

export interface ExecutionRef {
  projectId: string;
  executionId: string;
}

/** Input of a run of the automation interpreter: the definition, position and step count it continues from, after continue-as-new. */
export interface RunAutomationInput extends ExecutionRef {
  steps?: Step[];
  at?: string | null;
  seq?: number;
  /** A new run of a parked execution: the step `at` is the wait it parked in, and is not begun again. */
  resume?: boolean;
}

/** What a parked execution's next run needs (stored in its row). */
export interface ParkedState {
  steps: Step[];
  at: string;
  seq: number;
}

/** What a step did: go on at `next` (null: the journey is complete), or stop. */
export type StepOutcome =
  /**
   * `ended`: there is no next step, and the activity has already marked the execution COMPLETED. `branch`: the
   * CONDITION's branch taken (stored with the step run for the execution's trace; both may lead to the same step).
   */
  | { next: string | null; ended?: true; branch?: 'yes' | 'no' }
  /** The execution is no longer active (cancelled, or its workflow or contact deleted). */
  | { cancelled: true }
  /** The step cannot succeed (a permanent webhook failure, an unusable template): the execution FAILED with this error (already marked when `ended`). */
  | { failed: string; ended?: true };

/** Where a wait stands, as the database decides it (an event and a timeout racing each other are settled there). */
export type WaitState =
  | { state: 'WAITING'; remainingMs: number | null }
  | { state: 'DONE'; by: 'event' | 'timeout' }
  | { state: 'CANCELLED' };

/**
 * The workflow's clock (epoch ms), passed by engines whose timers run on a clock of their own
 * (WorkflowContext.timersOwnClock). A wait's deadline is counted from, and compared with, the later of the database's
 * now() and this time: the wait is over when either clock has reached it. Without it, the database's clock alone.
 */
export interface WaitClock {
  now?: number;
}

export interface StepRef extends ExecutionRef {
  /** Which step run this is (1, 2, …, across continue-as-new): a retried activity finds its run already done. */
  seq: number;
  step: Step;
}

export interface ImportRef {
  projectId: string;
  importId: string;
}

export type ImportStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'CANCELLED' | 'FAILED';

/** The input of the importContacts workflow: the import's ids (its options, file and checkpoint are in its row). */
export type ImportContactsInput = ImportRef;

export interface ImportBatchResult {
  /** RUNNING while the import goes on; anything else (CANCELLED) stops the workflow. */
  status: ImportStatus;
  /** The file has been read to its end. */
  done: boolean;
  /** Rows read by this batch. */
  rows: number;
}

/** The activities every engine runs for the workflows, as plain async functions (activities/). */
export interface Activities {
  beginCampaign(ref: CampaignRef): Promise<CampaignPhase>;
  /** The next batch of the audience after `after` into the delivery queue: all of it, or (A/B) the sample's or the rest's part. */
  campaignBatch(ref: CampaignRef & { after: string | null; size: number; part?: BatchPart }): Promise<BatchResult>;
  campaignProgress(ref: CampaignRef): Promise<{ pending: number; cancelled: boolean; ratePerSecond?: number }>;
  finishCampaign(ref: CampaignRef): Promise<CampaignPhase>;
  /**
   * An A/B campaign's wait for its winner: begins it (WAITING, its end stored; a repeated call keeps the first end)
   * and answers where it stands.
   */
  testWait(ref: CampaignRef & WaitClock): Promise<TestWaitState>;
  /**
   * Decides an A/B campaign's winner (a person's choice, else its metric), records it with a `campaign.winner` event,
   * once: a repeated call answers the winner recorded. `cancelled`: the campaign is no longer sending.
   */
  decideWinner(ref: CampaignRef): Promise<{ cancelled: boolean; winner: number | null }>;
  cancelCampaign(ref: CampaignRef): Promise<CampaignPhase>;
  /**
   * The campaign's workflow gave up: SCHEDULED or SENDING → FAILED with `error`, its queued emails cancelled and a
   * `campaign.failed` event recorded, in one transaction; answers its status afterwards (unchanged if already final).
   */
  failCampaign(ref: CampaignRef & { error: string }): Promise<CampaignPhase>;
  /** Checks the next batch of sending domains (all projects, id order) against DNS and stores the outcomes. */
  checkDomainBatch(ref: { after: string | null; size: number }): Promise<DomainBatchResult>;
  /** Schedules the re-check run of the slot after `after`; returns that slot. */
  scheduleDomainChecks(ref: { after: number }): Promise<number>;
  /** The months ahead created and those past the retention dropped (partition names); the parents analysed when they changed. */
  retentionPartitions(ref: Record<string, never>): Promise<{ created: string[]; dropped: string[] }>;
  /** One bounded round of row deletes (a project's shorter retention, legacy and default partitions); `more`: call again. */
  retentionTrim(ref: Record<string, never>): Promise<{ deleted: number; more: boolean }>;
  /** Schedules the retention run of the slot after `after`; returns that slot. */
  scheduleRetention(ref: { after: number }): Promise<number>;
  /** Loads the steps of the execution's workflow, once, at its start (null: it was cancelled before it started). */
  startExecution(ref: ExecutionRef): Promise<{ steps: Step[] } | null>;
  /** Runs one SEND_EMAIL, CONDITION or UPDATE_CONTACT step, once per `seq`, and records it as the current step. */
  runStep(ref: StepRef): Promise<StepOutcome>;
  /** Calls a WEBHOOK step's URL (once per `seq` when it succeeded); throws on transient failures, for the engine to retry. */
  callWebhook(ref: StepRef): Promise<StepOutcome>;
  /** Enters a DELAY or WAIT_FOR_EVENT step: WAITING, with its deadline stored; a repeated call keeps the first deadline. */
  beginWait(ref: StepRef & WaitClock): Promise<WaitState>;
  /** After a wake-up or a timer: has the wait ended (event, deadline), and if not, how long is left. */
  checkWait(ref: ExecutionRef & { stepId: string } & WaitClock): Promise<WaitState>;
  /** Parks a waiting execution (this run ends; the dispatcher starts the next when the wait is over), unless the wait has ended meanwhile. */
  parkExecution(ref: ExecutionRef & ParkedState): Promise<WaitState | { state: 'PARKED' }>;
  /**
   * Ends an active execution with this status; answers its final status (CANCELLED if it had been cancelled). `exit`:
   * the EXIT step that ended it, recorded as its last step run (the execution's trace shows where it stopped).
   */
  finishExecution(ref: ExecutionRef & { status: 'COMPLETED' | 'EXITED' | 'FAILED'; error?: string; exit?: { seq: number; stepId: string } }): Promise<ExecutionStatus>;
  /** Cancels an active execution (its engine workflow was cancelled, e.g. in the Temporal UI). */
  cancelExecution(ref: ExecutionRef): Promise<ExecutionStatus>;
  /** QUEUED → RUNNING (or a RUNNING one resumed); any other status is answered as it is. */
  beginImport(ref: ImportRef): Promise<ImportStatus>;
  /** Reads, checks and merges the next batch of the file from the import's checkpoint, which it advances. */
  importBatch(ref: ImportRef): Promise<ImportBatchResult>;
  /** RUNNING → COMPLETED, the stored file deleted. */
  finishImport(ref: ImportRef): Promise<ImportStatus>;
  /** Its workflow was cancelled in the engine: the import CANCELLED, as by the API. */
  cancelImport(ref: ImportRef): Promise<ImportStatus>;
  /** Its workflow gave up: FAILED with `error`. */
  failImport(ref: ImportRef & { error: string }): Promise<ImportStatus>;
}

/** Webhook calls have their own timeout and retry policy (WEBHOOK_RETRY). */
export type WebhookActivities = Pick<Activities, 'callWebhook'>;
export type OtherActivities = Omit<Activities, 'callWebhook'>;
