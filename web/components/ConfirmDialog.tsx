import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import { Button } from './Button';
import { useModal } from './Dialog';

/**
 * A confirmation (<dialog>, modal: focus stays inside, Escape cancels) that names what will happen, with a button that
 * says it ("Delete contact", not "OK"). `onConfirm` may be async: the button shows progress until it settles, and the
 * dialog closes when it succeeds (a failure stays open, its toast shown by the API wrapper).
 *
 *   <ConfirmDialog open={asking} title="Delete ada@example.org?" confirm="Delete contact" danger
 *     onConfirm={() => call(api.DELETE(...))} onClose={() => setAsking(false)}>
 *     Their events and emails stay; the contact is gone from every segment.
 *   </ConfirmDialog>
 */
export function ConfirmDialog({ open, title, children, confirm, dismiss = 'Cancel', danger, onConfirm, onClose }: {
  open: boolean; title: string; children?: ComponentChildren; confirm: string;
  /** The other button's words, when "Cancel" would be ambiguous (cancelling a campaign: "Keep it scheduled"). */
  dismiss?: string;
  danger?: boolean; onConfirm: () => unknown | Promise<unknown>; onClose: () => void;
}) {
  const ref = useModal(open);
  const [busy, setBusy] = useState(false);
  // Its own id: two confirmations on one page (rotate, delete) must not share the heading that names them.
  const titleId = useId();
  const run = async () => {
    setBusy(true);
    try {
      await onConfirm();
      onClose();
    } catch {
      // The API wrapper has shown the failure; the dialog stays for another try or a cancel.
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog ref={ref} class="dialog" aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      <div class="dialog-body">
        <h2 id={titleId}>{title}</h2>
        {children ? <p>{children}</p> : null}
      </div>
      <div class="dialog-actions">
        <Button onClick={onClose} disabled={busy}>{dismiss}</Button>
        <Button variant={danger ? 'danger' : 'primary'} busy={busy} onClick={run}>{confirm}</Button>
      </div>
    </dialog>
  );
}
