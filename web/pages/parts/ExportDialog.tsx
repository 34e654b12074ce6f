/**
 * The Contacts page's Export (issue 30): CSV or JSON Lines, the columns (the record's and the project's data keys), all
 * contacts or a segment's, downloaded from GET /contacts/export with the session (web/api.ts `download`). What the file
 * holds is the API's: this dialog only builds the query.
 */
import { useState } from 'preact/hooks';
import { api, ApiFailure, call, download, type Schemas } from '../../api';
import { Button, Checkbox, Dialog, FormError, Icon, SelectField, toast } from '../../components';
import { useLoad } from '../../hooks';
import { useDataKeys } from './contacts';

type Format = 'csv' | 'jsonl';

/** The record's columns offered, in the file's order (the API's names: a script asks for the same). */
const RECORD = ['email', 'subscribed', 'createdAt', 'updatedAt', 'id'];
const DEFAULT_COLUMNS = ['email', 'subscribed', 'createdAt', 'updatedAt'];

const FORMATS: [Format, string][] = [['csv', 'CSV (spreadsheets)'], ['jsonl', 'JSON Lines (one JSON object per line)']];

/** Mount it to show it (its look-ups are made then); `onClose` unmounts it. */
export function ExportDialog({ onClose }: { onClose: () => void }) {
  const dataKeys = useDataKeys();
  const segments = useLoad(() => call(api.GET('/segments', { params: { query: { limit: 100 } } })), []);
  const [format, setFormat] = useState<Format>('csv');
  const [columns, setColumns] = useState<string[]>(DEFAULT_COLUMNS);
  const [segmentId, setSegmentId] = useState('');
  const [bom, setBom] = useState(false);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const all = [...RECORD, ...dataKeys.map((k) => `data.${k}`)];
  // The file's columns keep the order they are offered in, whatever order they were ticked in.
  const toggle = (column: string, on: boolean) => setColumns((had) => all.filter((c) => c === column ? on : had.includes(c)));

  const run = async () => {
    if (!columns.length) { setError('Choose at least one column.'); return; }
    setBusy(true);
    setError('');
    try {
      const query = { format, columns: columns.join(','), ...(segmentId ? { segmentId } : {}), ...(format === 'csv' && bom ? { bom: true } : {}) };
      const name = await download(api.GET('/contacts/export', { params: { query }, parseAs: 'blob' }), `contacts.${format}`, { form: true });
      toast(`Downloaded ${name}`);
      onClose();
    } catch (err) {
      const fields = err instanceof ApiFailure ? Object.values(err.fields) : [];
      setError(fields.length ? fields.join(' ') : err instanceof Error ? err.message : 'The export did not start. Try again.');
    } finally {
      setBusy(false);
    }
  };

  const segmentChoices: [string, string][] = [['', 'All contacts'], ...(segments.data?.items ?? []).map((s: Schemas['Segment']): [string, string] => [s.id, s.name])];

  return (
    <Dialog open title="Export contacts" wide onClose={onClose} onSubmit={run}
      lede="A file of your contacts as they are when the export starts, oldest first. Large lists stream: the download may take a while."
      actions={<>
        <Button onClick={onClose} disabled={busy}>Cancel</Button>
        <Button type="submit" variant="primary" busy={busy}><Icon name="download" />Download</Button>
      </>}>
      <FormError>{error}</FormError>
      <div class="export-choices">
        <SelectField label="Contacts" value={segmentId} onValue={setSegmentId} options={segmentChoices}
          hint={segments.data && !segments.data.items.length ? 'No segments yet: every contact is exported.' : 'A segment’s members, or every contact.'} />
        <SelectField label="Format" value={format} onValue={(v) => setFormat(v as Format)} options={FORMATS} />
      </div>
      <fieldset class="checkbox-group export-columns">
        <legend>Columns</legend>
        <div class="checkbox-group-all">
          <button type="button" class="btn btn-ghost btn-sm" onClick={() => setColumns(all)}>Select all</button>
          <button type="button" class="btn btn-ghost btn-sm" onClick={() => setColumns([])}>Clear</button>
        </div>
        {all.map((c) => <Checkbox key={c} label={c} checked={columns.includes(c)} onChecked={(on) => toggle(c, on)} />)}
      </fieldset>
      <div class="field-hint">{dataKeys.length ? 'Dates are UTC. data.* keys as your newest contacts have them; a contact without a key has an empty value.' : 'Dates are UTC. Your contacts have no data keys yet.'}</div>
      {format === 'csv' ? (
        <Checkbox label="For Excel" hint="Starts the file with a byte order mark, so that Excel shows accents and other scripts correctly. Leave it off for other tools." checked={bom} onChecked={setBom} />
      ) : null}
    </Dialog>
  );
}
