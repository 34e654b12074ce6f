/** What the Inbound pages share: authentication results in words (web/pages/Inbound.tsx, InboundMessage.tsx). */
import { Badge, type Tone } from '../../components';
import type { Schemas } from '../../api';

export type InboundAuth = Schemas['InboundMessage']['auth'];
type Verdict = NonNullable<InboundAuth['spf']>['result'];

const TONE: Partial<Record<Verdict, Tone>> = { pass: 'success', fail: 'danger', softfail: 'warning', temperror: 'warning', permerror: 'danger', policy: 'warning' };

/** One check's result: "SPF pass" in green, "DKIM fail" in red, "DMARC none" in grey. */
export function AuthBadge({ check, result }: { check: string; result: Verdict }) {
  return <Badge tone={TONE[result] ?? 'neutral'}>{check} {result}</Badge>;
}

/** SPF, DKIM (the first signature's, or none), DMARC: what a list shows of a message's authentication. */
export function AuthBadges({ auth }: { auth: InboundAuth }) {
  return (
    <span class="inbound-auth">
      <AuthBadge check="SPF" result={auth.spf?.result ?? 'none'} />
      <AuthBadge check="DKIM" result={auth.dkim?.[0]?.result ?? 'none'} />
      <AuthBadge check="DMARC" result={auth.dmarc?.result ?? 'none'} />
    </span>
  );
}

/** "Grace Hopper <grace@example.org>", or the address alone. */
export const mailbox = (m: { address: string; name: string | null } | null | undefined) => (m ? (m.name ? `${m.name} <${m.address}>` : m.address) : '');
