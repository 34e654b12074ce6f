import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure, call, download, type Schemas } from '../../api';
import { Badge, Button, Checkbox, Dialog, FormError, Icon, Loading, Progress, SelectField, Time, type Tone } from '../../components';
import { useLoad, useVisibleInterval } from '../../hooks';
import { useSession } from '../../session';

/**
 * Contacts → Import (issue 30): a CSV or JSON Lines file, its first rows previewed with the column map the API proposes
 * (POST /contacts/imports/preview), the map and the options edited, then the whole file uploaded (POST
 * /contacts/imports; the browser streams it from disk) and the import followed until it ends (GET
 * /contacts/imports/:id, polled while the tab is visible), with the refused rows as a CSV download. The first step lists
 * the recent imports, each one opening on its progress or result. Closing the dialog never stops an import: it runs in
 * the engine.
 */

type Import = Schemas['ContactImport'];
type Preview = Schemas['ContactImportPreview'];
type Column = Preview['columns'][number];
type Target = Column['to'];
type DataType = NonNullable<Column['type']>;

/** What the preview reads of a file: the API reads its first 256 KB, so only that is sent. */
const PREVIEW_BYTES = 256 * 1024;
const POLL_MS = 1000;

const TARGETS: [Target, string][] = [['email', 'Email'], ['subscribed', 'Subscribed'], ['data', 'Data'], ['ignore', 'Ignore']];
const TYPES: [DataType, string][] = [['string', 'Text'], ['number', 'Number'], ['boolean', 'Yes / no'], ['date', 'Date']];
const MODES: [string, string][] = [['upsert', 'Add new and update existing'], ['create', 'Only add new contacts'], ['update', 'Only update existing contacts']];
const DATA_MODES: [string, string][] = [['merge', 'Merge: keep their other keys'], ['replace', 'Replace their data with the file\'s']];

const STATUS: Record<Import['status'], [string, Tone]> = {
  QUEUED: ['Queued', 'neutral'], RUNNING: ['Importing', 'info'], COMPLETED: ['Completed', 'success'], CANCELLED: ['Cancelled', 'warning'], FAILED: ['Failed', 'danger'],
};
const ended = (i: Import) => i.status === 'COMPLETED' || i.status === 'CANCELLED' || i.status === 'FAILED';

/** The media type the API reads a file as, from its name (browsers give a CSV file many types, or none). */
function mediaType(file: File): string {
  return /\.(jsonl|ndjson)$/i.test(file.name) ? 'application/x-ndjson' : 'text/csv';
}

/** A problem with the map before anything is sent: the API would refuse it the same way. */
function mapProblem(columns: Column[]): string {
  const emails = columns.filter((c) => c.to === 'email').length;
  if (emails === 0) return 'Choose the column that holds the email address.';
  if (emails > 1) return 'Only one column can be the email address.';
  if (columns.filter((c) => c.to === 'subscribed').length > 1) return 'Only one column can be the subscription.';
  const keys = columns.filter((c) => c.to === 'data').map((c) => (c.key ?? c.column).trim());
  if (keys.some((k) => k === '')) return 'Every data column needs a key.';
  const twice = keys.find((k, i) => keys.indexOf(k) !== i);
  return twice ? `Two columns are stored under the data key “${twice}”.` : '';
}

/** GET /contacts/imports/:id/errors, saved as a CSV file (api.ts download: the session and the project, as any call). */
async function downloadErrors(id: string): Promise<void> {
  await download(api.GET('/contacts/imports/{id}/errors', { params: { path: { id } }, parseAs: 'blob' }), `import-${id}-errors.csv`).catch(() => undefined);
}

const n = (x: number) => x.toLocaleString();
const fileSize = (bytes: number) => (bytes < 1024 * 1024 ? `${n(Math.max(1, Math.round(bytes / 1024)))} KB` : `${n(Math.round((10 * bytes) / 1024 / 1024) / 10)} MB`);

function StatusBadge({ status }: { status: Import['status'] }) {
  const [word, tone] = STATUS[status];
  return <Badge tone={tone}>{word}</Badge>;
}

/** Step 1: the file, and the recent imports. */
function ChooseFile({ onPreview, onOpen, busy, error }: { onPreview: (file: File) => void; onOpen: (i: Import) => void; busy: boolean; error: string }) {
  const [over, setOver] = useState(false);
  const recent = useLoad(() => call(api.GET('/contacts/imports', { params: { query: { limit: 5 } } })), []);
  const pick = (files: FileList | null | undefined) => { if (files?.[0]) onPreview(files[0]); };
  return (
    <>
      <FormError>{error}</FormError>
      <label class={`import-drop${over ? ' import-drop-over' : ''}`} aria-busy={busy ? 'true' : undefined}
        onDragOver={(e) => { e.preventDefault(); setOver(true); }} onDragLeave={() => setOver(false)}
        onDrop={(e) => { e.preventDefault(); setOver(false); pick(e.dataTransfer?.files); }}>
        <Icon name="download" size={22} />
        <span class="import-drop-title">{busy ? 'Reading the file…' : 'Choose a CSV or JSON Lines file'}</span>
        <span class="import-drop-hint">or drop it here. CSV with a header row, comma or semicolon separated, UTF-8.</span>
        <input class="visually-hidden" type="file" accept=".csv,.txt,.jsonl,.ndjson,text/csv,application/x-ndjson" disabled={busy}
          onChange={(e) => { pick(e.currentTarget.files); e.currentTarget.value = ''; }} />
      </label>
      <section class="import-recent" aria-labelledby="import-recent-title">
        <h3 id="import-recent-title">Recent imports</h3>
        {recent.loading && !recent.data ? <Loading what="Loading the recent imports" /> : null}
        {recent.data && !recent.data.items.length ? <p class="muted">No import yet.</p> : null}
        {recent.data?.items.length ? (
          <ul>
            {recent.data.items.map((i) => (
              <li key={i.id}>
                <button type="button" class="import-recent-row" onClick={() => onOpen(i)}>
                  <span class="import-recent-name">{i.fileName ?? 'Unnamed file'}</span>
                  <StatusBadge status={i.status} />
                  <span class="import-recent-counts">{n(i.rows.read)} rows · {n(i.rows.failed)} refused · <Time value={i.createdAt} /></span>
                </button>
              </li>
            ))}
          </ul>
        ) : null}
      </section>
    </>
  );
}

/** Step 2: the first rows and the column map, editable. */
function ColumnMap({ preview, columns, onColumns, problem }: { preview: Preview; columns: Column[]; onColumns: (c: Column[]) => void; problem: string }) {
  const set = (i: number, change: Partial<Column>) => onColumns(columns.map((c, j) => (j === i ? { ...c, ...change } : c)));
  return (
    <>
      <p class="import-summary">
        {preview.format === 'csv' ? `CSV, ${preview.delimiter === ';' ? 'semicolon' : 'comma'} separated` : 'JSON Lines'} · {columns.length} columns ·
        {' '}the first {n(preview.rows.length)} readable rows shown{preview.problems.length ? `; ${n(preview.problems.length)} of the rows read will be refused` : ''}.
      </p>
      {preview.problems.length ? (
        <div class="import-problems" role="note">
          <strong>Rows refused with the proposed map</strong>
          <ul>{preview.problems.slice(0, 5).map((p) => <li key={p.line}>Line {p.line}: {p.reason}</li>)}</ul>
        </div>
      ) : null}
      <FormError>{problem}</FormError>
      <div class="import-columns">
        <div class="import-column import-columns-head" aria-hidden="true"><span>Column</span><span>Import as</span><span>Data key</span><span>Type</span></div>
        {columns.map((c, i) => (
          <div key={c.column} class="import-column" role="group" aria-label={c.column || '(no name)'}>
            <div class="import-column-name">
              <span class="mono">{c.column || '(no name)'}</span>
              <span class="import-column-samples">{c.samples.filter((x) => x !== '').slice(0, 3).join(' · ') || 'empty in the first rows'}</span>
            </div>
            <div class="import-column-control">
              <label class="import-label" for={`import-to-${i}`}>Import as</label>
              <select id={`import-to-${i}`} class="select" value={c.to}
                onChange={(e) => { const to = e.currentTarget.value as Target; set(i, to === 'data' ? { to, key: c.key ?? c.column, type: c.type ?? 'string' } : { to }); }}>
                {TARGETS.map(([v, words]) => <option key={v} value={v}>{words}</option>)}
              </select>
            </div>
            {c.to === 'data' ? (
              <>
                <div class="import-column-control">
                  <label class="import-label" for={`import-key-${i}`}>Data key</label>
                  <input id={`import-key-${i}`} class="input mono" value={c.key ?? c.column} maxLength={100} autoComplete="off" spellcheck={false}
                    onInput={(e) => set(i, { key: e.currentTarget.value })} />
                </div>
                <div class="import-column-control">
                  <label class="import-label" for={`import-type-${i}`}>Type</label>
                  <select id={`import-type-${i}`} class="select" value={c.type ?? 'string'} onChange={(e) => set(i, { type: e.currentTarget.value as DataType })}>
                    {TYPES.map(([v, words]) => <option key={v} value={v}>{words}</option>)}
                  </select>
                </div>
              </>
            ) : <span class="import-column-none">{c.to === 'ignore' ? 'Not imported' : c.to === 'email' ? 'Identifies the contact' : 'Yes / no: true, false, yes, no, 1, 0'}</span>}
          </div>
        ))}
      </div>
    </>
  );
}

interface Options { mode: string; data: string; subscribed: boolean; segmentId: string; resubscribe: boolean }

/** Step 3: what the import does with known contacts, new ones' subscription, a segment, resubscribe (admins). */
function ImportOptions({ options, onOptions }: { options: Options; onOptions: (o: Options) => void }) {
  const { can } = useSession();
  const segments = useLoad(() => call(api.GET('/segments', { params: { query: { limit: 100 } } })), []);
  const statics = (segments.data?.items ?? []).filter((s) => s.type === 'STATIC');
  const set = (change: Partial<Options>) => onOptions({ ...options, ...change });
  return (
    <>
      <SelectField label="Contacts" value={options.mode} options={MODES} onValue={(mode) => set({ mode })}
        hint="A contact is known by its email address." />
      {options.mode !== 'create' ? (
        <SelectField label="Data of existing contacts" value={options.data} options={DATA_MODES} onValue={(data) => set({ data })} />
      ) : null}
      <Checkbox label="Subscribe new contacts" checked={options.subscribed} onChecked={(subscribed) => set({ subscribed })}
        hint="When their row has no subscription. A suppressed address still starts unsubscribed." />
      <SelectField label="Add to a static segment" value={options.segmentId} onValue={(segmentId) => set({ segmentId })}
        options={[['', segments.loading ? 'Loading segments…' : 'None'], ...statics.map((s): [string, string] => [s.id, s.name])]}
        hint={statics.length || segments.loading ? 'Every imported contact joins it.' : 'The project has no static segment: create one on the Segments page.'} />
      {can('admin') ? (
        <div class={`import-resubscribe${options.resubscribe ? ' import-resubscribe-on' : ''}`}>
          <Checkbox label="Let the file resubscribe contacts" checked={options.resubscribe} onChecked={(resubscribe) => set({ resubscribe })}
            hint="Contacts who unsubscribed, or whose address is suppressed, are subscribed again when their row says so." />
          {options.resubscribe ? (
            <p class="import-warning" role="alert"><Icon name="alert" size={16} />
              Only with their consent: mailing people who unsubscribed breaks the law in many countries and hurts your sending reputation. The import is recorded in the audit log.</p>
          ) : null}
        </div>
      ) : null}
    </>
  );
}

/** Step 4: the import's progress, then its result. */
function Progressing({ value }: { value: Import }) {
  const i = value;
  const [downloading, setDownloading] = useState(false);
  return (
    <>
      <div class="import-status">
        <span class="import-file">{i.fileName ?? 'Unnamed file'}</span>
        <StatusBadge status={i.status} />
      </div>
      {!ended(i) ? (
        <div class="import-progress">
          <Progress label="Import progress" value={i.fileBytes ? i.bytesRead : undefined} max={i.fileBytes} />
          <p class="import-rate" aria-live="polite">
            {i.status === 'QUEUED' ? 'Waiting for the engine to start it…' : `${n(i.rows.read)} rows read · ${n(i.rowsPerSecond)} rows/s · ${i.fileBytes ? Math.floor((100 * i.bytesRead) / i.fileBytes) : 0} %`}
          </p>
        </div>
      ) : (
        <p class="import-rate" aria-live="polite">
          {i.status === 'COMPLETED' ? `${n(i.rows.read)} rows read${i.rowsPerSecond ? ` at ${n(i.rowsPerSecond)} rows/s` : ''}.` : null}
          {i.status === 'CANCELLED' ? 'Cancelled: the rows imported before it stay.' : null}
          {i.status === 'FAILED' ? `It stopped: ${i.error ?? 'an unknown error'}. The rows imported before it stay.` : null}
        </p>
      )}
      <dl class="stats import-stats">
        <div class="stat"><dt class="stat-label">Created</dt><dd class="stat-value">{n(i.rows.created)}</dd></div>
        <div class="stat"><dt class="stat-label">Updated</dt><dd class="stat-value">{n(i.rows.updated)}</dd></div>
        <div class="stat"><dt class="stat-label">Unchanged</dt><dd class="stat-value">{n(i.rows.skipped)}</dd></div>
        <div class="stat"><dt class="stat-label">Refused</dt><dd class={`stat-value${i.rows.failed ? ' import-failed' : ''}`}>{n(i.rows.failed)}</dd></div>
      </dl>
      {i.rows.failed ? (
        <div class="row">
          <Button size="sm" busy={downloading} onClick={() => { setDownloading(true); void downloadErrors(i.id).finally(() => setDownloading(false)); }}>
            <Icon name="download" />Download refused rows (CSV)
          </Button>
          <span class="muted import-hint">Each with its line and the reason.</span>
        </div>
      ) : null}
    </>
  );
}

type Step = { at: 'file' } | { at: 'columns'; file: File; preview: Preview } | { at: 'options'; file: File; preview: Preview } | { at: 'import'; value: Import };

export function ImportDialog({ open, onClose, onImported }: { open: boolean; onClose: () => void; onImported: () => void }) {
  const [step, setStep] = useState<Step>({ at: 'file' });
  const [columns, setColumns] = useState<Column[]>([]);
  const [options, setOptions] = useState<Options>({ mode: 'upsert', data: 'merge', subscribed: true, segmentId: '', resubscribe: false });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [problem, setProblem] = useState('');

  useEffect(() => {
    if (!open) return;
    setStep({ at: 'file' });
    setOptions({ mode: 'upsert', data: 'merge', subscribed: true, segmentId: '', resubscribe: false });
    setError('');
    setProblem('');
  }, [open]);

  const running = step.at === 'import' && !ended(step.value);
  useVisibleInterval(() => {
    if (step.at !== 'import') return;
    void call(api.GET('/contacts/imports/{id}', { params: { path: { id: step.value.id } } })).then((value) => {
      setStep((s) => (s.at === 'import' && s.value.id === value.id ? { at: 'import', value } : s));
      if (ended(value)) onImported();
    }).catch(() => undefined);
  }, POLL_MS, open && running);

  const preview = async (file: File) => {
    setBusy(true);
    setError('');
    try {
      const answer = await call(api.POST('/contacts/imports/preview', {
        body: file.slice(0, PREVIEW_BYTES) as unknown as string, bodySerializer: (b: unknown) => b as BodyInit, headers: { 'Content-Type': mediaType(file) },
      }), { form: true });
      setColumns(answer.columns);
      setProblem('');
      setStep({ at: 'columns', file, preview: answer });
    } catch (err) {
      setError(err instanceof ApiFailure ? `${file.name}: ${err.fields.file ?? err.message}` : 'The file could not be read.');
    } finally {
      setBusy(false);
    }
  };

  const start = async (file: File) => {
    setBusy(true);
    setError('');
    try {
      const map = columns.filter((c) => c.to !== 'ignore').map(({ column, to, key, type }) => (to === 'data' ? { column, to, key: (key ?? column).trim(), type } : { column, to }));
      const value = await call(api.POST('/contacts/imports', {
        params: { query: {
          // The map travels as JSON text in the query (the body is the file).
          columns: JSON.stringify(map),
          mode: options.mode as 'upsert', data: options.data as 'merge', subscribed: options.subscribed, name: file.name,
          ...(options.resubscribe ? { resubscribe: true } : {}), ...(options.segmentId ? { segmentId: options.segmentId } : {}),
        } },
        body: file as unknown as string, bodySerializer: (b: unknown) => b as BodyInit, headers: { 'Content-Type': mediaType(file) },
      }), { form: true });
      setStep({ at: 'import', value });
    } catch (err) {
      setError(err instanceof ApiFailure ? (Object.values(err.fields)[0] ?? err.message) : 'The import did not start.');
    } finally {
      setBusy(false);
    }
  };

  const cancelImport = async (id: string) => {
    setBusy(true);
    try {
      const value = await call(api.POST('/contacts/imports/{id}/cancel', { params: { path: { id } } }));
      setStep({ at: 'import', value });
      onImported();
    } finally {
      setBusy(false);
    }
  };

  const toOptions = () => {
    if (step.at !== 'columns') return;
    const found = mapProblem(columns);
    setProblem(found);
    if (!found) setStep({ at: 'options', file: step.file, preview: step.preview });
  };

  if (step.at === 'file') {
    return (
      <Dialog open={open} title="Import contacts" onClose={onClose} wide lede="Add or update contacts from a file: you check its columns before anything is imported."
        actions={<Button onClick={onClose}>Cancel</Button>}>
        <ChooseFile onPreview={(f) => void preview(f)} onOpen={(value) => setStep({ at: 'import', value })} busy={busy} error={error} />
      </Dialog>
    );
  }
  if (step.at === 'columns') {
    return (
      <Dialog open={open} title="Import contacts: columns" onClose={onClose} wide onSubmit={toOptions} lede={<>What each column of <strong>{step.file.name}</strong> becomes. Columns set to Ignore are not imported.</>}
        actions={<>
          <Button onClick={() => setStep({ at: 'file' })}>Back</Button>
          <Button type="submit" variant="primary">Next: options</Button>
        </>}>
        <ColumnMap preview={step.preview} columns={columns} onColumns={(c) => { setColumns(c); if (problem) setProblem(mapProblem(c)); }} problem={problem} />
      </Dialog>
    );
  }
  if (step.at === 'options') {
    return (
      <Dialog open={open} title="Import contacts: options" onClose={onClose} wide onSubmit={() => void start(step.file)}
        lede={<>{step.file.name} · {fileSize(step.file.size)}</>}
        actions={<>
          <Button onClick={() => setStep({ at: 'columns', file: step.file, preview: step.preview })} disabled={busy}>Back</Button>
          <Button type="submit" variant="primary" busy={busy}>Start import</Button>
        </>}>
        <FormError>{error}</FormError>
        <ImportOptions options={options} onOptions={setOptions} />
      </Dialog>
    );
  }
  const value = step.value;
  return (
    <Dialog open={open} title={ended(value) ? 'Import finished' : 'Importing contacts'} onClose={onClose} wide
      lede={ended(value) ? <>Started <Time value={value.createdAt} />.</> : 'It goes on if you close this window: Import shows it again.'}
      actions={ended(value) ? <>
        <Button onClick={() => setStep({ at: 'file' })}>Import another file</Button>
        <Button variant="primary" onClick={onClose}>Done</Button>
      </> : <>
        <Button variant="danger" busy={busy} onClick={() => void cancelImport(value.id)}>Cancel import</Button>
        <Button variant="primary" onClick={onClose}>Close</Button>
      </>}>
      <Progressing value={value} />
    </Dialog>
  );
}
