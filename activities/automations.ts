import { executionSteps, type AutomationDeps } from '../automations/executions';

export type { AutomationDeps };

/** The steps of an automation execution (automations/executions.ts), as the engines run them. */
export function automationActivities(deps: AutomationDeps) {
  return executionSteps(deps);
}
