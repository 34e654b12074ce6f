import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

/**
 * A modal <dialog> with its own content: a form (create a key, invite someone) or something shown once (a secret, a
 * link, recovery codes). Focus stays inside; Escape and the backdrop's Cancel call `onClose`. For a yes-or-no
 * question use ConfirmDialog instead. With `onSubmit` the body is a <form> (Enter submits; the submit button goes
 * in `actions`).
 *
 *   <Dialog open={open} title="Create an API key" onClose={close} onSubmit={create}
 *     actions={<><Button onClick={close}>Cancel</Button><Button type="submit" variant="primary">Create key</Button></>}>
 *     <TextField label="Name" … />
 *   </Dialog>
 */
export function Dialog({ open, title, lede, children, actions, onClose, onSubmit, wide }: {
  open: boolean; title: string; lede?: ComponentChildren; children?: ComponentChildren; actions: ComponentChildren;
  onClose: () => void; onSubmit?: (e: Event) => void; wide?: boolean;
}) {
  const ref = useModal(open);
  const titleId = useId();
  const body = (
    <>
      <div class="dialog-body">
        <h2 id={titleId}>{title}</h2>
        {lede ? <p>{lede}</p> : null}
        {open ? <div class="dialog-content">{children}</div> : null}
      </div>
      <div class="dialog-actions">{actions}</div>
    </>
  );
  return (
    <dialog ref={ref} class={`dialog${wide ? ' dialog-wide' : ''}`} aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      {onSubmit ? <form noValidate onSubmit={(e) => { e.preventDefault(); onSubmit(e); }}>{body}</form> : body}
    </dialog>
  );
}

/** A <dialog> shown modally while `open` (focus kept inside, Escape closes), closed when not: Dialog's and ConfirmDialog's. */
export function useModal(open: boolean) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return ref;
}
