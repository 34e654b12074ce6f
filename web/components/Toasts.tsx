import { useEffect, useState } from 'preact/hooks';
import { Icon } from './icons';

/**
 * Toasts: a line that says an action finished (or failed), bottom right, gone after a few seconds. Callable from
 * anywhere (the API wrapper shows failures with it):  toast('Domain added');  toast.error('Herald did not answer').
 * <Toasts/> is mounted once by the app; it is a polite live region, so screen readers hear them.
 */
interface Toast { id: number; text: string; kind: 'success' | 'error' }

let items: Toast[] = [];
let nextId = 1;
const listeners = new Set<(t: Toast[]) => void>();
const publish = () => { for (const l of listeners) l(items); };

function dismiss(id: number): void {
  items = items.filter((t) => t.id !== id);
  publish();
}

function show(text: string, kind: Toast['kind']): void {
  const id = nextId++;
  items = [...items.slice(-3), { id, text, kind }];
  publish();
  setTimeout(() => dismiss(id), kind === 'error' ? 8000 : 4000);
}

export const toast = Object.assign((text: string) => show(text, 'success'), { error: (text: string) => show(text, 'error') });

export function Toasts() {
  const [list, setList] = useState(items);
  useEffect(() => {
    listeners.add(setList);
    return () => { listeners.delete(setList); };
  }, []);
  return (
    <div class="toasts" role="status" aria-live="polite">
      {list.map((t) => (
        <div key={t.id} class={`toast${t.kind === 'error' ? ' toast-error' : ''}`}>
          <span class="toast-text">{t.text}</span>
          <button type="button" class="btn btn-ghost btn-sm btn-icon" aria-label="Dismiss" onClick={() => dismiss(t.id)}><Icon name="x" /></button>
        </div>
      ))}
    </div>
  );
}
