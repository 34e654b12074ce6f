import type { AudienceCondition } from '../../../audience/condition';
import type { Duration, Step, StepType } from '../../../automations/steps';
import type { IconName } from '../../components';

/**
 * The steps of an automation as the console shows them: each type's name, icon and one-line purpose, and a step's
 * summary on its node (the builder's edits of the step list are flowEdits.ts).
 */

export const STEP_INFO: Record<StepType, { label: string; icon: IconName; purpose: string }> = {
  SEND_EMAIL: { label: 'Send email', icon: 'emails', purpose: 'Send one of your templates to the contact.' },
  DELAY: { label: 'Delay', icon: 'clock', purpose: 'Wait a number of minutes, hours or days.' },
  WAIT_FOR_EVENT: { label: 'Wait for event', icon: 'inbox', purpose: 'Wait until the contact does something, or give up after a while.' },
  CONDITION: { label: 'Condition', icon: 'automations', purpose: 'Go one way or the other by the contact’s data, events or segments.' },
  UPDATE_CONTACT: { label: 'Update contact', icon: 'contacts', purpose: 'Set data on the contact, or subscribe or unsubscribe them.' },
  WEBHOOK: { label: 'Webhook', icon: 'webhooks', purpose: 'Call a URL of yours with the contact.' },
  EXIT: { label: 'Exit', icon: 'logout', purpose: 'End the journey here.' },
};

/** The order the "add a step" choice lists them in. */
export const STEP_CHOICES: StepType[] = ['SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'UPDATE_CONTACT', 'WEBHOOK', 'EXIT'];

const UNIT_WORD: Record<Duration['unit'], [string, string]> = { minutes: ['minute', 'minutes'], hours: ['hour', 'hours'], days: ['day', 'days'] };

export function durationText(d: Partial<Duration> | undefined): string {
  if (!d || typeof d.amount !== 'number' || !d.unit || !(d.unit in UNIT_WORD)) return 'no duration set';
  return `${d.amount.toLocaleString()} ${UNIT_WORD[d.unit][d.amount === 1 ? 0 : 1]}`;
}

const OPERATOR_WORDS: Record<string, string> = {
  equals: 'is', notEquals: 'is not', contains: 'contains', notContains: 'does not contain', startsWith: 'starts with', endsWith: 'ends with',
  greaterThan: '>', lessThan: '<', greaterThanOrEqual: '≥', lessThanOrEqual: '≤', exists: 'is set', notExists: 'is not set',
  within: 'within', olderThan: 'older than', triggered: 'happened', notTriggered: 'never happened', triggeredWithin: 'happened within',
  notTriggeredWithin: 'did not happen within', memberOf: 'is a member', notMemberOf: 'is not a member',
};

/** A condition in a line: its first filter in words, and how many more there are. */
export function conditionText(filter: AudienceCondition | undefined): string {
  const all = filter?.groups?.flatMap((g) => g?.filters ?? []) ?? [];
  const f = all[0];
  if (!f || typeof f.field !== 'string') return 'no filter set';
  const value = f.value === undefined ? '' : ` ${typeof f.value === 'string' ? f.value : JSON.stringify(f.value)}`;
  const unit = f.unit ? ` ${f.unit}` : '';
  const more = all.length > 1 ? ` (+${all.length - 1} more)` : '';
  return `${f.field} ${OPERATOR_WORDS[f.operator] ?? f.operator}${value}${unit}${more}`;
}

/** What a step does, in a line (its node's second line). `templateName` names a template by id. */
export function stepSummary(step: Step, templateName: (id: string) => string | undefined): string {
  switch (step.type) {
    case 'SEND_EMAIL': return step.config.template ? templateName(step.config.template) ?? 'A template of this project' : 'No template chosen';
    case 'DELAY': return `Wait ${durationText(step.config)}`;
    case 'WAIT_FOR_EVENT': {
      const event = step.config.event ? `“${step.config.event}”` : 'an event (not named yet)';
      return step.config.timeout ? `For ${event}, at most ${durationText(step.config.timeout)}` : `For ${event}`;
    }
    case 'CONDITION': return `If ${conditionText(step.config.filter)}`;
    case 'UPDATE_CONTACT': {
      const keys = Object.keys(step.config.data ?? {});
      const parts = [
        ...(keys.length ? [`set ${keys.slice(0, 2).join(', ')}${keys.length > 2 ? ` +${keys.length - 2}` : ''}`] : []),
        ...(step.config.subscribed === true ? ['subscribe'] : step.config.subscribed === false ? ['unsubscribe'] : []),
      ];
      return parts.length ? parts.join(', ').replace(/^./, (c) => c.toUpperCase()) : 'Nothing to change yet';
    }
    case 'WEBHOOK': return step.config.url ? `${step.config.method ?? 'POST'} ${step.config.url}` : 'No URL yet';
    case 'EXIT': return 'The journey ends here';
  }
}
