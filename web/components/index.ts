/** The console's components (web/README.md lists them with their use). */
export { Badge, EmailStatus, emailStatusWord, type Tone } from './Badge';
export { Button, LinkButton, type ButtonVariant } from './Button';
export { ConfirmDialog } from './ConfirmDialog';
export { Time, formatDateTime, formatFullDateTime, formatRelative } from './DateTime';
export { EmptyState } from './EmptyState';
export { Checkbox, Field, FormError, SelectField, TextAreaField, TextField } from './Field';
export { Icon, type IconName } from './icons';
export { Page } from './Page';
export { Pager, totalText, useCursorPages, type CursorPages } from './Pager';
export { SearchField } from './SearchField';
export { SecretDialog } from './SecretDialog';
export { MessagePreview } from './MessagePreview';
export { Loading, Progress, Spinner } from './Spinner';
export { Toasts, toast } from './Toasts';
export { CopyButton, CopyField } from './CopyButton';
export { Dialog } from './Dialog';
export { Tabs } from './Tabs';
