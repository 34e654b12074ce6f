/** Parts of the Templates pages (Templates, TemplateEditor): not a page (web/pages/parts/ holds what two pages share). */
import { Badge } from '../../components';

export type TemplateType = 'TRANSACTIONAL' | 'MARKETING';
export type BodyType = 'html' | 'markdown';

/** A template's type in words: marketing mail goes to subscribed contacts only, with the unsubscribe headers. */
export const TYPE_OPTIONS: [TemplateType, string][] = [['TRANSACTIONAL', 'Transactional'], ['MARKETING', 'Marketing']];
export const FORMAT_OPTIONS: [BodyType, string][] = [['html', 'HTML'], ['markdown', 'Markdown']];

export function TemplateTypeBadge({ type }: { type: string }) {
  return type === 'MARKETING' ? <Badge tone="accent">Marketing</Badge> : <Badge tone="info">Transactional</Badge>;
}
