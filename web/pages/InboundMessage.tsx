import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { api, call, download } from '../api';
import { Badge, Button, Icon, Loading, MessagePreview, Page, Time } from '../components';
import { useLoad } from '../hooks';
import { AuthBadge, mailbox } from './parts/inbound';
import { NotLoaded } from './parts/NotLoaded';

/**
 * One received message (GET /inbound/:id): who sent it to which address, its SPF/DKIM/DMARC/ARC results, the email of
 * ours it replies to, its body (HTML only through MessagePreview: its own document and policy, no scripts, remote
 * images on request), its attachments and the raw message as downloads, and its parse warnings.
 */
const size = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${Math.round(n / 1024)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`);
const REMOTE = /(<img[^>]+src\s*=\s*["']?\s*https?:|url\(\s*["']?\s*https?:|background\s*=\s*["']?\s*https?:)/i;

export default function InboundMessage() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const loaded = useLoad(() => call(api.GET('/inbound/{id}', { params: { path: { id } } }), { expect: [404] }), [id]);
  const [remote, setRemote] = useState(false);
  const back = <a href="/app/inbound">Inbound</a>;
  if (loaded.loading && !loaded.data) return <Page title="Message" breadcrumb={back}><Loading what="Loading the message" /></Page>;
  const m = loaded.data;
  if (!m) return <NotLoaded error={loaded.error} thing="message" title="Message" icon="inbox" breadcrumb={back} back={{ href: '/app/inbound', label: 'Back to received mail' }} retry={loaded.reload} />;
  const title = m.subject || '(no subject)';

  return (
    <Page title={title} breadcrumb={back} lede={<>From {mailbox(m.from) || m.mailFrom || 'no sender'} to <span class="mono">{m.recipient}</span>, <Time value={m.createdAt} /></>}
      actions={<Button onClick={() => void download(api.GET('/inbound/{id}/raw', { params: { path: { id: m.id } }, parseAs: 'blob' }), `${m.id}.eml`).catch(() => undefined)}><Icon name="download" />Download raw</Button>}>
      <div class="stack">
        {m.warnings.length ? (
          <div class="form-note" role="note"><strong>Stored as received, with warnings:</strong><ul>{m.warnings.map((w) => <li key={w}>{w}</li>)}</ul></div>
        ) : null}
        <section class="card" aria-labelledby="message-body">
          <div class="card-header">
            <h2 id="message-body">Message</h2>
            {m.html && REMOTE.test(m.html) && !remote ? <Button size="sm" variant="ghost" onClick={() => setRemote(true)}><Icon name="image" />Load remote images</Button> : null}
          </div>
          {m.html ? <MessagePreview html={m.html} title={`The message: ${title}`} remoteImages={remote} />
            : m.text ? <pre class="card-body inbound-text">{m.text}</pre> : <p class="card-body muted">The message has no body.</p>}
        </section>
        {m.attachments.length ? (
          <section class="card" aria-labelledby="message-files">
            <div class="card-header"><h2 id="message-files">Attachments</h2></div>
            <ul class="inbound-files">
              {m.attachments.map((a) => (
                <li key={a.index}>
                  <span class="truncate">{a.filename}</span>
                  <span class="muted small">{a.contentType}, {size(a.size)}{a.disposition === 'inline' ? ', inline' : ''}</span>
                  <Button size="sm" variant="ghost" aria-label={`Download ${a.filename}`}
                    onClick={() => void download(api.GET('/inbound/{id}/attachments/{n}', { params: { path: { id: m.id, n: a.index } }, parseAs: 'blob' }), a.filename).catch(() => undefined)}><Icon name="download" /></Button>
                </li>
              ))}
            </ul>
          </section>
        ) : null}
        <section class="card" aria-labelledby="message-about">
          <div class="card-header"><h2 id="message-about">Details</h2></div>
          <dl class="kv card-body">
            <dt>From</dt><dd>{mailbox(m.from) || <span class="muted">No From header</span>}</dd>
            <dt>Envelope sender</dt><dd class="mono">{m.mailFrom || '<>'}</dd>
            <dt>To</dt><dd>{m.to.map(mailbox).join(', ') || <span class="muted">None</span>}</dd>
            {m.cc.length ? <><dt>Cc</dt><dd>{m.cc.map(mailbox).join(', ')}</dd></> : null}
            {m.replyTo.length ? <><dt>Reply-To</dt><dd>{m.replyTo.map(mailbox).join(', ')}</dd></> : null}
            <dt>Recipient</dt><dd class="mono">{m.recipient}</dd>
            <dt>Authentication</dt>
            <dd class="inbound-auth">
              <AuthBadge check="SPF" result={m.auth.spf?.result ?? 'none'} />
              {m.auth.dkim?.length ? m.auth.dkim.map((d) => <AuthBadge key={`${d.domain}/${d.selector}`} check={`DKIM ${d.domain}`} result={d.result} />) : <AuthBadge check="DKIM" result="none" />}
              <AuthBadge check="DMARC" result={m.auth.dmarc?.result ?? 'none'} />
              <AuthBadge check="ARC" result={m.auth.arc?.result ?? 'none'} />
            </dd>
            <dt>In reply to</dt>
            <dd>{m.inReplyTo ? <a href={`/app/emails/${m.inReplyTo.emailId}`}>An email you sent</a> : <span class="muted">No email of yours</span>}{m.inReplyTo?.contactId ? <> · <a href={`/app/contacts/${m.inReplyTo.contactId}`}>its contact</a></> : null}</dd>
            <dt>Message-ID</dt><dd class="mono truncate">{m.messageId ?? <span class="muted">None</span>}</dd>
            <dt>Size</dt><dd>{size(m.size)}</dd>
            <dt>Received</dt><dd><Time value={m.createdAt} /> {m.remoteAddress ? <Badge tone="neutral">{m.remoteAddress}</Badge> : null}</dd>
          </dl>
        </section>
      </div>
    </Page>
  );
}
