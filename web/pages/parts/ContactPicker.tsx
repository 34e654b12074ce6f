import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, call, type Schemas } from '../../api';
import { Button, Field, Icon } from '../../components';

type Contact = Schemas['Contact'];

/**
 * Picks one contact of the project: a search box over GET /contacts (part of the address, any case) with the matches
 * in a list under it (an ARIA combobox: arrows move, Enter chooses, Escape closes). Once chosen, the contact is shown
 * with a button to clear it. Each keystroke's search waits a moment and cancels the one before it.
 */
export function ContactPicker({ label, value, onValue, hint }: { label: string; value: Contact | null; onValue: (c: Contact | null) => void; hint?: string }) {
  const id = useId();
  const [text, setText] = useState('');
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const [found, setFound] = useState<{ for: string; items: Contact[] } | null>(null);
  const input = useRef<HTMLInputElement>(null);
  // "Change" removes the button that had the focus: the focus moves to the search box that replaces it.
  const [refocus, setRefocus] = useState(false);
  useEffect(() => { if (refocus && !value) { input.current?.focus(); setRefocus(false); } }, [refocus, value]);

  useEffect(() => {
    if (!open) return undefined;
    const search = text.trim();
    const abort = new AbortController();
    const timer = setTimeout(() => {
      call(api.GET('/contacts', { params: { query: { limit: 6, ...(search ? { search } : {}) } }, signal: abort.signal }), { form: true })
        .then((page) => { setFound({ for: search, items: page.items }); setActive(0); }, () => undefined);
    }, 200);
    return () => { clearTimeout(timer); abort.abort(); };
  }, [text, open]);

  if (value) {
    return (
      <Field label={label} hint={hint}>
        {(control) => (
          <div class="contact-chosen">
            <Icon name="contacts" size={14} />
            <output {...control} class="truncate-line">{value.email}</output>
            <Button size="sm" variant="ghost" onClick={() => { onValue(null); setText(''); setRefocus(true); }}>Change</Button>
          </div>
        )}
      </Field>
    );
  }

  const items = found?.items ?? [];
  const choose = (c: Contact) => { onValue(c); setOpen(false); };
  const listId = `${id}-list`;
  const shown = open && found !== null;
  return (
    <Field label={label} hint={hint}>
      {(control) => (
        <div class="combobox">
          <div class="search">
            <Icon name="search" />
            <input {...control} ref={input} class="input" type="search" role="combobox" autoComplete="off" spellcheck={false} placeholder="Search by email"
              aria-expanded={shown ? 'true' : 'false'} aria-controls={listId} aria-autocomplete="list"
              aria-activedescendant={shown && items[active] ? `${listId}-${active}` : undefined}
              value={text}
              onInput={(e) => { setText(e.currentTarget.value); setOpen(true); }}
              onFocus={() => setOpen(true)}
              onBlur={() => setOpen(false)}
              onKeyDown={(e) => {
                if (e.key === 'ArrowDown') { e.preventDefault(); setOpen(true); setActive((a) => Math.min(a + 1, Math.max(0, items.length - 1))); }
                else if (e.key === 'ArrowUp') { e.preventDefault(); setActive((a) => Math.max(0, a - 1)); }
                else if (e.key === 'Enter' && shown && items[active]) { e.preventDefault(); choose(items[active]!); }
                else if (e.key === 'Escape' && open) { e.preventDefault(); setOpen(false); }
              }} />
          </div>
          <ul id={listId} role="listbox" aria-label={`${label}: matches`} class="combobox-list" hidden={!shown || !items.length}>
            {items.map((c, i) => (
              // Chosen on mousedown: a click would blur the box (and close the list) before it lands.
              <li key={c.id} id={`${listId}-${i}`} role="option" aria-selected={i === active ? 'true' : 'false'} class="combobox-option"
                onMouseDown={(e) => { e.preventDefault(); choose(c); }} onMouseEnter={() => setActive(i)}>
                <span class="truncate-line">{c.email}</span>
                {Object.keys(c.data).length ? <span class="muted small truncate-line">{Object.keys(c.data).slice(0, 3).join(', ')}</span> : null}
              </li>
            ))}
          </ul>
          {shown && !items.length ? <p class="combobox-list combobox-empty" role="status">{found.for ? `No contact matches “${found.for}”` : 'No contacts yet'}</p> : null}
        </div>
      )}
    </Field>
  );
}
