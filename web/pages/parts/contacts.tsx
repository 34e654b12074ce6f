/** Parts of the Contacts pages (Contacts, ContactDetail): not a page (web/pages/parts/ holds what two pages share). */
import { api, call, type Schemas } from '../../api';
import { Badge } from '../../components';
import { useLoad } from '../../hooks';

/**
 * A contact's data as the person typed it: JSON that must be an object. A mistake is named before anything is sent
 * ("Unexpected token } in JSON at position 14"), in the words of the browser's own parser.
 */
export function parseData(text: string): { value: Record<string, unknown> } | { error: string } {
  const trimmed = text.trim();
  if (!trimmed) return { value: {} };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (err) {
    return { error: `Not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { error: 'Data must be a JSON object, like {"firstName": "Ada"}' };
  }
  return { value: value as Record<string, unknown> };
}

/**
 * The PATCH that makes a contact's data exactly `next`: the API merges keys into what is stored and removes a key
 * sent as null, so a key the person deleted is sent as null.
 */
export function dataPatch(stored: Record<string, unknown>, next: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...next };
  for (const key of Object.keys(stored)) if (!(key in next)) patch[key] = null;
  return patch;
}

export function SubscriptionBadge({ subscribed }: { subscribed: boolean }) {
  return subscribed ? <Badge tone="success">Subscribed</Badge> : <Badge>Unsubscribed</Badge>;
}

/**
 * The project's data keys, as far as the newest 100 contacts show them, sorted: no route lists data keys, and these are
 * suggestions enough (the audience builder's, the export's columns). Empty until loaded, and on a failure.
 */
export function useDataKeys(): string[] {
  const contacts = useLoad(() => call(api.GET('/contacts', { params: { query: { limit: 100 } } })).catch(() => ({ items: [] as Schemas['Contact'][] })), []);
  return [...new Set((contacts.data?.items ?? []).flatMap((c) => Object.keys(c.data)))].sort();
}
