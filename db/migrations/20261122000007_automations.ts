import type { Knex } from 'knex';

/**
 * Automation workflows (the API's `/workflows`) and their executions.
 *
 * An execution row is written in the same transaction as the event that triggers it (db/queries/events.ts
 * recordEvents), so a trigger is never lost: the row is the outbox entry of the engine workflow that runs it.
 * `outbox` says what the engine still has to be told — START (run it) or WAKE (a waited-for event arrived, or
 * its wait was shortened) — and the execution dispatcher (worker/executionDispatcher.ts) tells it and clears the
 * column in one transaction. The row is also the truth about the execution: the interpreter's activities mirror its
 * status, step and wait into it, and decide races (an event against a timeout, a cancel against a step) here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('automations', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.boolean('enabled').notNullable().defaultTo(false);
    t.text('trigger_event').notNullable();
    t.jsonb('steps').notNullable();
    t.boolean('allow_reentry').notNullable().defaultTo(false);
    // The templates its SEND_EMAIL steps use: deleting one of them while the workflow is enabled is refused (409).
    t.specificType('template_ids', 'uuid[]').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves GET/PATCH/DELETE /workflows/:id, the interpreter's load and GET /workflows (keyset on id).
    t.primary(['project_id', 'id'], { constraintName: 'automations_pkey' });
  });
  // Serves the trigger match inside every event write: enabled workflows of the project listening to a name.
  await knex.raw('CREATE INDEX automations_trigger_idx ON automations (project_id, trigger_event) WHERE enabled');
  // Serves DELETE /templates/:id's check (template_ids @> ARRAY[id] among the project's enabled workflows).
  await knex.raw('CREATE INDEX automations_templates_idx ON automations USING gin (template_ids) WHERE enabled');

  await knex.schema.createTable('automation_executions', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable();
    t.uuid('automation_id').notNullable();
    t.uuid('contact_id').notNullable();
    t.text('status').notNullable().defaultTo('RUNNING').checkIn(['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED']);
    t.text('current_step_id');
    // NOT allow_reentry at trigger time: at most one active exclusive execution per workflow and contact (index below).
    t.boolean('exclusive').notNullable();
    t.uuid('trigger_event_id');
    // What the engine must still be told (START / WAKE); NULL once it has been.
    t.text('outbox').checkIn(['START', 'WAKE']);
    // A wait in progress (DELAY or WAIT_FOR_EVENT): until when, for which event, and the event that ended it.
    t.text('wait_event');
    t.timestamp('wait_until', { useTz: true });
    t.uuid('woken_by_event_id');
    // Embedded engine: a long wait ends the engine run (a waiting DBOS workflow would hold worker memory for days);
    // `resume` holds what the next run needs ({ steps, at, seq }), and the dispatcher starts it when the wait ends.
    t.boolean('parked').notNullable().defaultTo(false);
    t.jsonb('resume');
    // Engine runs so far: run 0 is the workflow `execution-<id>`, run n the workflow `execution-<id>-<n>`.
    t.integer('run').notNullable().defaultTo(0);
    t.text('error');
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves the interpreter's activities (WHERE project_id = ? AND id = ?).
    t.primary(['project_id', 'id'], { constraintName: 'automation_executions_pkey' });
    t.foreign(['project_id', 'automation_id'], 'automation_executions_automation_fkey').references(['project_id', 'id']).inTable('automations').onDelete('CASCADE');
    t.foreign(['project_id', 'contact_id'], 'automation_executions_contact_fkey').references(['project_id', 'id']).inTable('contacts').onDelete('CASCADE');
  });
  // One execution at a time per workflow and contact unless the workflow allows reentry: the trigger's
  // INSERT … ON CONFLICT DO NOTHING relies on it, so two concurrent events cannot both start one.
  await knex.raw(`CREATE UNIQUE INDEX automation_executions_one_active_idx ON automation_executions (automation_id, contact_id)
    WHERE exclusive AND status IN ('RUNNING', 'WAITING')`);
  // Serves GET /workflows/:id/executions (keyset on id), with or without a status filter, and the cancel on disable.
  await knex.raw('CREATE INDEX automation_executions_list_idx ON automation_executions (project_id, automation_id, id DESC)');
  await knex.raw('CREATE INDEX automation_executions_status_idx ON automation_executions (project_id, automation_id, status, id DESC)');
  // Serves ?contactId= on the list, the contact FK's cascade, and the wake-up match of WAIT_FOR_EVENT in every event write.
  await knex.raw('CREATE INDEX automation_executions_contact_idx ON automation_executions (project_id, contact_id, id DESC)');
  await knex.raw(`CREATE INDEX automation_executions_waiting_idx ON automation_executions (project_id, contact_id, wait_event)
    WHERE status = 'WAITING' AND wait_event IS NOT NULL`);
  // Serves the dispatcher's poll: the (usually empty) outbox.
  await knex.raw('CREATE INDEX automation_executions_outbox_idx ON automation_executions (outbox, id) WHERE outbox IS NOT NULL');
  // Serve the dispatcher's admission control: executions running now (Temporal), or holding a live engine
  // workflow, running or in a short wait (embedded).
  await knex.raw("CREATE INDEX automation_executions_running_idx ON automation_executions (id) WHERE status = 'RUNNING' AND outbox IS NULL");
  await knex.raw(`CREATE INDEX automation_executions_live_idx ON automation_executions (id)
    WHERE status IN ('RUNNING', 'WAITING') AND NOT parked AND outbox IS DISTINCT FROM 'START'`);
  // Serves the dispatcher's resumption of parked executions whose deadline has come.
  await knex.raw("CREATE INDEX automation_executions_parked_idx ON automation_executions (wait_until) WHERE parked AND status = 'WAITING'");

  // The steps an execution has run, one row per step run (`seq` counts them): a retried activity finds its step
  // already done and answers the stored outcome instead of sending the email or updating the contact again.
  await knex.schema.createTable('automation_step_runs', (t) => {
    t.uuid('project_id').notNullable();
    t.uuid('execution_id').notNullable();
    t.integer('seq').notNullable();
    t.text('step_id').notNullable();
    t.jsonb('outcome').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['project_id', 'execution_id', 'seq'], { constraintName: 'automation_step_runs_pkey' });
    t.foreign(['project_id', 'execution_id'], 'automation_step_runs_execution_fkey').references(['project_id', 'id']).inTable('automation_executions').onDelete('CASCADE');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('automation_step_runs');
  await knex.schema.dropTable('automation_executions');
  await knex.schema.dropTable('automations');
}
