import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiFailure } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  /** Loads again (after a change). */
  reload: () => void;
}

/**
 * Loads what a page shows: `load` runs on mount and whenever a value of `deps` changes; an answer that arrives after
 * a newer request started is dropped (fast typing in a filter never shows an old page).
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const mine = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => { if (mine === latest.current) setState({ data, loading: false }); },
      (error: Error) => { if (mine === latest.current) setState({ error, loading: false }); },
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/**
 * Of a record shown and a newer answer about it, the one to show: the answer, unless it is the same record saved
 * earlier than the one shown. Replies come back out of order (the GET begun when a new record's first save moved the
 * page to its URL may land after the save or send that followed it), and a page never goes back to an older state.
 */
export function laterSaved<T extends { id: string; updatedAt: string }>(shown: T | null, next: T): T {
  return shown && shown.id === next.id && Date.parse(next.updatedAt) < Date.parse(shown.updatedAt) ? shown : next;
}

/** Sets the document's title: "<page> · Herald". */
export function useTitle(title: string): void {
  useEffect(() => { document.title = title ? `${title} · Herald` : 'Herald'; }, [title]);
}

export interface Submission {
  busy: boolean;
  /** The API's message per field (a 422's), shown under each field. */
  fields: Record<string, string>;
  /** What failed that no field names, shown above the form. */
  error: string;
  submit: (e: Event) => Promise<void>;
}

/**
 * A form's submission: busy while `action` runs; a failure's field messages go under their fields and the rest
 * above the form. A link's token refused (`fields.token`: used, expired, unknown) is no field the person can fix:
 * it is said above the form with `tokenHint`, what to do instead. `initialError` is shown before any try.
 */
export function useSubmit(action: () => Promise<unknown>, opts: { fallback: string; tokenHint?: string; initialError?: string }): Submission {
  const [busy, setBusy] = useState(false);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState(opts.initialError ?? '');
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFields({});
    setError('');
    try {
      await action();
    } catch (err) {
      const { token, ...rest } = err instanceof ApiFailure ? err.fields : {};
      setFields(rest);
      if (token) setError(`${token}. ${opts.tokenHint ?? ''}`.trim());
      else if (err instanceof ApiFailure && err.status === 409) setError(`${err.message}. ${err.suggestion ?? ''}`.trim());
      else if (!Object.keys(rest).length) setError(err instanceof Error ? err.message : opts.fallback);
    } finally {
      setBusy(false);
    }
  };
  return { busy, fields, error, submit };
}

/** The first look again at something under way; each next one waits twice as long, up to the page's own period. */
export const FIRST_LOOK_MS = 250;

/** The wait before look number `n` (0 first) at something under way: 250 ms, 500 ms, 1 s, … capped at `maxMs`. */
export const lookDelay = (n: number, maxMs: number): number => Math.min(maxMs, FIRST_LOOK_MS * 2 ** n);

/**
 * Calls `tick` while `active` and the page is visible (a live figure: a campaign sending): soon after it becomes
 * active, then less and less often, up to every `ms` (a small send is seen done within a second, a long one costs a
 * request every `ms`). No calls while the tab is hidden, and one at once when it is shown again (the backoff starts
 * over), so a tab left open in the background asks nothing.
 */
export function useVisibleInterval(tick: () => void, ms: number, active: boolean): void {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let n = 0;
    const next = () => { timer = setTimeout(() => { timer = undefined; latest.current(); next(); }, lookDelay(n++, ms)); };
    const start = () => { if (timer === undefined) { n = 0; next(); } };
    const stop = () => { if (timer !== undefined) { clearTimeout(timer); timer = undefined; } };
    const onVisibility = () => {
      if (document.visibilityState === 'visible') { latest.current(); start(); } else stop();
    };
    if (document.visibilityState === 'visible') start();
    document.addEventListener('visibilitychange', onVisibility);
    return () => { stop(); document.removeEventListener('visibilitychange', onVisibility); };
  }, [ms, active]);
}

/**
 * Looks again (`recheck`, a list's reload) while `waiting` (rows still moving), once per answer `seen`: soon at first,
 * then less often, up to every `maxMs`. `busy` (a load in flight) holds the next look without starting the backoff over.
 */
export function useRecheck(recheck: () => void, opts: { waiting: boolean; busy: boolean; seen: unknown; maxMs: number }): void {
  const looks = useRef(0);
  const { waiting, busy, seen, maxMs } = opts;
  useEffect(() => {
    if (!waiting) { looks.current = 0; return undefined; }
    if (busy) return undefined;
    const timer = setTimeout(recheck, lookDelay(looks.current++, maxMs));
    return () => clearTimeout(timer);
  }, [waiting, busy, seen]);
}

export interface LeaveGuard {
  /** Where a link was about to go while there were unsaved changes: ask, then `leave()` or `stay()`. */
  pending: string | null;
  leave: () => void;
  stay: () => void;
}

/**
 * Unsaved changes: while `dirty`, leaving the page asks first. Closing or reloading the tab gets the browser's own
 * question (beforeunload); a click on a link of the console is held (a capturing listener, before the router's own)
 * and `pending` names where it went, for a ConfirmDialog. The browser's Back button is not held: the router has
 * already moved when it hears of it.
 *
 *   const guard = useLeaveGuard(changed);
 *   <ConfirmDialog open={guard.pending !== null} title="Leave without saving?" confirm="Leave" onConfirm={guard.leave} onClose={guard.stay} />
 */
export function useLeaveGuard(dirty: boolean): LeaveGuard {
  const [pending, setPending] = useState<string | null>(null);
  const { route } = useLocation();
  useEffect(() => {
    if (!dirty) return undefined;
    const unload = (e: BeforeUnloadEvent) => { e.preventDefault(); };
    const click = (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const link = (e.target as Element | null)?.closest?.('a[href]') as HTMLAnchorElement | null;
      if (!link || link.origin !== location.origin || (link.target && link.target !== '_self') || link.hasAttribute('download')) return;
      const to = link.pathname + link.search;
      if (to === location.pathname + location.search) return;
      e.preventDefault();
      e.stopPropagation();
      setPending(to);
    };
    addEventListener('beforeunload', unload);
    addEventListener('click', click, true);
    return () => {
      removeEventListener('beforeunload', unload);
      removeEventListener('click', click, true);
    };
  }, [dirty]);
  return {
    pending,
    leave: () => { const to = pending; setPending(null); if (to) route(to); },
    stay: () => setPending(null),
  };
}
