import { useState } from 'preact/hooks';
import { Button } from './Button';
import { Icon } from './icons';

/**
 * Cursor paging (the API's `nextCursor`, never an offset): `cursor` is the page shown, `next` moves on with the
 * answer's nextCursor, `previous` returns along the cursors seen. Counting a million rows is the slow part of a list,
 * so the pager names the rows shown, not a total.
 *
 *   const pages = useCursorPages(filterKey);       // back to the first page when the filter changes
 *   useLoad(() => call(api.GET('/suppressions', { params: { query: { cursor: pages.cursor } } })), [pages.cursor]);
 *   <Pager pages={pages} shown={list.items.length} nextCursor={list.nextCursor} noun="addresses" />
 */
export interface CursorPages {
  cursor: string | undefined;
  /** 1 for the first page. */
  number: number;
  next: (cursor: string) => void;
  previous: () => void;
}

export function useCursorPages(resetKey = ''): CursorPages {
  const [state, setState] = useState<{ key: string; stack: (string | undefined)[] }>({ key: resetKey, stack: [undefined] });
  const stack = state.key === resetKey ? state.stack : [undefined];
  if (state.key !== resetKey) setState({ key: resetKey, stack });
  return {
    cursor: stack[stack.length - 1],
    number: stack.length,
    next: (cursor) => setState({ key: resetKey, stack: [...stack, cursor] }),
    previous: () => setState({ key: resetKey, stack: stack.length > 1 ? stack.slice(0, -1) : stack }),
  };
}

export function Pager({ pages, shown, nextCursor, noun, pageSize }: { pages: CursorPages; shown: number; nextCursor: string | null | undefined; noun: string; pageSize: number }) {
  if (pages.number === 1 && !nextCursor) return null;
  const from = (pages.number - 1) * pageSize + 1;
  return (
    <nav class="pager" aria-label="Pages">
      <span>{shown ? `${noun} ${from.toLocaleString()}–${(from + shown - 1).toLocaleString()}` : `No ${noun.toLowerCase()} here`}</span>
      <div class="pager-buttons">
        <Button size="sm" onClick={pages.previous} disabled={pages.number === 1}><Icon name="arrowLeft" />Previous</Button>
        <Button size="sm" onClick={() => nextCursor && pages.next(nextCursor)} disabled={!nextCursor}>Next<Icon name="arrowRight" /></Button>
      </div>
    </nav>
  );
}

/**
 * A list's total as the API counts it: exact up to 1,000, and past that `total: 1000, totalExact: false` (the lists over
 * tables that grow: emails, events, contacts, executions, deliveries, received mail, suppressions, the audit log, a
 * segment's members), shown "more than 1,000"; a contact search counts up to 100, shown "more than 100". With nouns,
 * the right one follows the number.
 */
export function totalText(page: { total: number; totalExact?: boolean }, one = '', many = one): string {
  const exact = page.totalExact !== false;
  const noun = exact && page.total === 1 ? one : many;
  return `${exact ? '' : 'more than '}${page.total.toLocaleString()}${noun ? ` ${noun}` : ''}`;
}
