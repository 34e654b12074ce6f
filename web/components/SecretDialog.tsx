import type { ComponentChildren } from 'preact';
import { Button } from './Button';
import { CopyField } from './CopyButton';
import { Dialog } from './Dialog';
import { Icon } from './icons';

/**
 * A secret shown once (a webhook's signing secret, an API key): the value to copy, and a clear word that it will not
 * be shown again. Closing it is the person's "I have it". The one way the console shows a secret once.
 */
export function SecretDialog({ open, title, secret, what, onClose, children }: {
  open: boolean; title: string; secret: string; what: string; onClose: () => void; children?: ComponentChildren;
}) {
  return (
    <Dialog open={open} title={title} onClose={onClose} wide actions={<Button variant="primary" onClick={onClose}>I have copied it</Button>}>
      <div class="secret-warning" role="note"><Icon name="alert" size={15} /><span>Copy the {what} now: you will not see it again. Herald keeps no copy it can show you.</span></div>
      <CopyField label={what} value={secret} secret />
      {children}
    </Dialog>
  );
}
