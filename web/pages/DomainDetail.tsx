import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, call } from '../api';
import { Button, ConfirmDialog, CopyButton, Icon, Loading, Page, Progress, Time, toast } from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';
import { DomainStatus, RECORD_PURPOSE, RecordStatus, recordsFound, type DomainJson } from './parts/domain';
import { NotLoaded } from './parts/NotLoaded';

/**
 * A domain's page: its DNS records as a table (type, host, value, status), a copy button per host and value, "Verify
 * now" (POST /domains/:id/verify) with its progress and the result per record, and (admins) delete with confirmation.
 */
function outcome(d: DomainJson): string {
  const missing = d.records.filter((r) => r.status !== 'VERIFIED').length;
  if (d.status === 'VERIFIED') return missing ? `${d.domain} is verified; ${missing === 1 ? '1 record was' : `${missing} records were`} not found` : `${d.domain} is verified: every record was found`;
  return `${d.domain} is not verified: ${missing === 1 ? '1 record was' : `${missing} records were`} not found`;
}

export default function DomainDetail() {
  const { params } = useRoute();
  const { route } = useLocation();
  const { can } = useSession();
  const id = params.id!;
  const loaded = useLoad(() => call(api.GET('/domains/{id}', { params: { path: { id } } }), { expect: [404] }), [id]);
  const [checked, setChecked] = useState<DomainJson | null>(null);
  const [verifying, setVerifying] = useState(false);
  const [asking, setAsking] = useState(false);
  const domain = checked?.id === id ? checked : loaded.data;
  const admin = can('admin');

  if (loaded.loading && !domain) return <Page title="Domain" breadcrumb={<a href="/app/domains">Domains</a>}><Loading what="Loading the domain" /></Page>;
  if (!domain) {
    return <NotLoaded error={loaded.error} thing="domain" title="Domain" icon="domains" breadcrumb={<a href="/app/domains">Domains</a>} back={{ href: '/app/domains', label: 'Back to domains' }} retry={loaded.reload} />;
  }

  const verify = async () => {
    setVerifying(true);
    try {
      const after = await call(api.POST('/domains/{id}/verify', { params: { path: { id } } }));
      setChecked(after);
      (after.status === 'VERIFIED' ? toast : toast.error)(outcome(after));
    } catch {
      // the API wrapper showed the failure
    } finally {
      setVerifying(false);
    }
  };
  const remove = async () => {
    await call(api.DELETE('/domains/{id}', { params: { path: { id } } }));
    toast(`${domain.domain} deleted`);
    route('/app/domains');
  };

  return (
    <Page title={domain.domain} breadcrumb={<a href="/app/domains">Domains</a>}
      lede={<span class="domain-lede"><DomainStatus status={domain.status} /><span>{recordsFound(domain)}</span><span>Last checked {domain.checkedAt ? <Time value={domain.checkedAt} relative /> : 'never'}</span></span>}
      actions={admin ? (
        <>
          <Button variant="primary" busy={verifying} onClick={verify}>{verifying ? 'Checking DNS…' : <><Icon name="refresh" />Verify now</>}</Button>
          <Button variant="danger" onClick={() => setAsking(true)} disabled={verifying}><Icon name="trash" />Delete</Button>
        </>
      ) : null}>
      <div class="stack">
        {domain.status !== 'VERIFIED' ? (
          <p class="form-note">
            Publish these records at your DNS provider{admin ? ', then press Verify now' : ''}. DNS changes can take a few minutes to
            show; Herald also checks again on its own. Mail from {domain.domain} is sent once its DKIM record is found.
          </p>
        ) : null}
        <section class="card" aria-labelledby="records-title">
          <div class="card-header">
            <h2 id="records-title">DNS records</h2>
            {checked?.id === id && !verifying ? <span class="muted small" role="status">Checked just now</span> : null}
          </div>
          {verifying ? <Progress label={`Checking the DNS records of ${domain.domain}`} /> : null}
          <div class="records-wrap">
            <table class="table records-table">
              <thead>
                <tr><th>Type</th><th>Host</th><th>Value</th><th>Status</th></tr>
              </thead>
              <tbody>
                {domain.records.map((r) => (
                  <tr key={r.purpose} data-purpose={r.purpose}>
                    <td data-label="Type"><span class="record-type">{r.type}</span><span class="sub">{RECORD_PURPOSE[r.purpose]}</span></td>
                    <td data-label="Host">
                      <div class="record-cell"><code class="record-host">{r.name}</code><CopyButton value={r.name} label={`Copy the host of the ${RECORD_PURPOSE[r.purpose]} record`} /></div>
                    </td>
                    <td data-label="Value">
                      <div class="record-cell"><code class="record-value">{r.value}</code><CopyButton value={r.value} label={`Copy the value of the ${RECORD_PURPOSE[r.purpose]} record`} /></div>
                      {r.note ? <span class="sub record-note">{r.note}</span> : null}
                    </td>
                    <td data-label="Status">{verifying ? <span class="muted small">Checking…</span> : <RecordStatus status={r.status} />}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
        <section class="card" aria-labelledby="about-title">
          <div class="card-header"><h2 id="about-title">About</h2></div>
          <dl class="kv card-body">
            <dt>Status</dt><dd><DomainStatus status={domain.status} /></dd>
            <dt>Added</dt><dd><Time value={domain.createdAt} /></dd>
            <dt>Verified</dt><dd>{domain.verifiedAt ? <Time value={domain.verifiedAt} /> : <span class="muted">Not yet</span>}</dd>
            <dt>Last check</dt><dd>{domain.checkedAt ? <Time value={domain.checkedAt} /> : <span class="muted">Never</span>}</dd>
          </dl>
        </section>
      </div>
      <ConfirmDialog open={asking} title={`Delete ${domain.domain}?`} confirm="Delete domain" danger onConfirm={remove} onClose={() => setAsking(false)}>
        Herald stops sending mail from {domain.domain} at once: emails from its addresses are refused until it is added and
        verified again, with a new DKIM key to publish. Its records in your DNS are not touched.
      </ConfirmDialog>
    </Page>
  );
}
