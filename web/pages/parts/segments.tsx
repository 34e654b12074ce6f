/** Parts of the Segments pages (Segments, SegmentDetail): not a page (web/pages/parts/ holds what two pages share). */
import { Badge } from '../../components';

export function SegmentType({ type }: { type: 'DYNAMIC' | 'STATIC' }) {
  return type === 'DYNAMIC' ? <Badge tone="accent">Dynamic</Badge> : <Badge>Static</Badge>;
}

/**
 * Addresses as a person pastes them: one per line, or separated by commas, semicolons or spaces; each once (the API
 * compares addresses without case).
 */
export function parseAddresses(text: string): string[] {
  const seen = new Map<string, string>();
  for (const part of text.split(/[\s,;]+/)) {
    const address = part.trim();
    if (address && !seen.has(address.toLowerCase())) seen.set(address.toLowerCase(), address);
  }
  return [...seen.values()];
}
