/**
 * Plunk's form of a `data` entry in /v1/send and /v1/track: `{ value, persistent? }`. `value` is what renders and is
 * recorded; `persistent: false` keeps it off the contact (this email or event only). Recognised strictly: an object
 * whose keys are exactly `value`, or `value` and a boolean `persistent`; anything else is a plain value.
 */
export interface DataEntry {
  value: unknown;
  persistent?: boolean;
}

/** `data` of /v1/send and /v1/track: plain values, or DataEntry. */
export type RequestData = Record<string, unknown>;

export function isDataEntry(v: unknown): v is DataEntry {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  if (!keys.includes('value')) return false;
  if (keys.length === 1) return true;
  return keys.length === 2 && typeof (v as DataEntry).persistent === 'boolean';
}

/** The values of request data, what renders and what an event records: each DataEntry replaced by its `value`. */
export function dataValues(data: RequestData | undefined): Record<string, unknown> {
  if (!data) return {};
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, isDataEntry(v) ? v.value : v]));
}

/** What of request data is stored on the contact: plain values and entries not marked `persistent: false`. */
export function persistentData(data: RequestData | undefined): Record<string, unknown> | undefined {
  if (!data) return undefined;
  return Object.fromEntries(Object.entries(data).flatMap(([k, v]) => {
    if (!isDataEntry(v)) return [[k, v]];
    return v.persistent === false ? [] : [[k, v.value]];
  }));
}
