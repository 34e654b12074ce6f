import { useId } from 'preact/hooks';
import type { Schemas } from '../../api';
import { Button, Checkbox, Icon, SelectField, TextAreaField, TextField } from '../../components';
import { AB_LIMITS, leastFittingPercent, sampleFits, VARIANT_KEYS, type AbMetric } from '../../../campaigns/abRules';
import type { Campaign } from './campaigns';
import { eachWords, samplePlan, testSentence, waitWords } from './abWords';
import { TemplatePicker } from './TemplatePicker';

/**
 * The composer's A/B test (issue 32): variants A and B (up to 5), each overriding any of the campaign's subject,
 * preview text, sender name and message (its own HTML, or a template), the fields left empty showing the campaign's
 * value; and the test: the sample's share of the audience (with the counts it gives at the audience's size now), the
 * wait, and what decides. The API's refusals are shown at their fields (`variants.1.subject`, `abTest.samplePercent`).
 */
type Template = Schemas['Template'];
export type WaitUnit = 'minutes' | 'hours' | 'days';

export interface VariantForm {
  name: string;
  subject: string;
  previewText: string;
  fromName: string;
  /** The campaign's message, one of its own (`body`), or a template's (`templateId`). */
  content: 'campaign' | 'own' | 'template';
  body: string;
  templateId: string;
}

export interface AbForm {
  /** The test is on: the variants and the settings go with the campaign. Off, they stay on the screen until it is saved. */
  on: boolean;
  variants: VariantForm[];
  samplePercent: string;
  waitAmount: string;
  waitUnit: WaitUnit;
  metric: AbMetric;
}

const UNIT_MINUTES: Record<WaitUnit, number> = { minutes: 1, hours: 60, days: 1440 };

export const newVariant = (): VariantForm => ({ name: '', subject: '', previewText: '', fromName: '', content: 'campaign', body: '', templateId: '' });

/** A campaign's test as the form holds it; a plain campaign's: off, with A and B ready and a 20 % sample, 4 hours, opens. */
export function abFormOf(c: Campaign | null): AbForm {
  const minutes = c?.abTest?.waitMinutes ?? 240;
  const unit: WaitUnit = minutes % 1440 === 0 ? 'days' : minutes % 60 === 0 ? 'hours' : 'minutes';
  return {
    on: !!c?.variants?.length,
    variants: c?.variants?.length ? c.variants.map((v) => ({
      name: v.name ?? '', subject: v.subject ?? '', previewText: v.previewText ?? '', fromName: v.fromName ?? '',
      content: v.templateId ? 'template' : v.body !== null ? 'own' : 'campaign', body: v.body ?? '', templateId: v.templateId ?? '',
    })) : [newVariant(), newVariant()],
    samplePercent: String(c?.abTest?.samplePercent ?? 20),
    waitAmount: String(minutes / UNIT_MINUTES[unit]),
    waitUnit: unit,
    metric: c?.abTest?.metric ?? 'opens',
  };
}

/** A number field's value ('' or not a number: NaN, which the API refuses at its field). */
const numberOf = (s: string) => (s.trim() === '' ? Number.NaN : Number(s));
export const waitMinutesOf = (f: AbForm) => Math.round(numberOf(f.waitAmount) * UNIT_MINUTES[f.waitUnit]);

/** The variants and the test as the API takes them (null, null: a plain campaign). */
export function abBodyOf(f: AbForm) {
  if (!f.on) return { variants: null, abTest: null };
  return {
    variants: f.variants.map((v) => ({
      name: v.name.trim() || null,
      subject: v.subject.trim() ? v.subject : null,
      previewText: v.previewText.trim() ? v.previewText : null,
      fromName: v.fromName.trim() || null,
      body: v.content === 'own' ? v.body : null,
      templateId: v.content === 'template' ? v.templateId || null : null,
    })),
    abTest: { samplePercent: numberOf(f.samplePercent), waitMinutes: waitMinutesOf(f), metric: f.metric },
  };
}

/** What the form can tell before the API does: a variant "from a template" needs its template. */
export function abFormErrors(f: AbForm): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!f.on) return errors;
  f.variants.forEach((v, i) => { if (v.content === 'template' && !v.templateId) errors[`variants.${i}.templateId`] = 'Choose a template for this variant, or another message'; });
  return errors;
}

/** The test's settings, when they are whole numbers in range (for the counts and the confirmation), else null. */
export function abSettings(f: AbForm): { samplePercent: number; waitMinutes: number; metric: AbMetric } | null {
  const samplePercent = numberOf(f.samplePercent);
  const waitMinutes = waitMinutesOf(f);
  if (!f.on || !Number.isInteger(samplePercent) || samplePercent < AB_LIMITS.minPercent || samplePercent > AB_LIMITS.maxPercent) return null;
  if (!Number.isInteger(waitMinutes) || waitMinutes < AB_LIMITS.minWaitMinutes || waitMinutes > AB_LIMITS.maxWaitMinutes) return null;
  return { samplePercent, waitMinutes, metric: f.metric };
}

/** What a variant's empty fields stand for: the campaign's own values as the composer shows them. */
export interface CampaignValues {
  subject: string;
  previewText: string;
  fromName: string;
  /** The campaign's own HTML (a variant "with its own HTML" starts from it), or its template's when that is HTML. */
  body: string;
}

/** A radio choice with its label and a line under it (the composer's audience choices). */
function Choice({ name, checked, onChoose, label, hint }: { name: string; checked: boolean; onChoose: () => void; label: string; hint: string }) {
  const id = useId();
  return (
    <div class="checkbox audience-choice">
      <input type="radio" id={id} name={name} checked={checked} onChange={onChoose} aria-describedby={`${id}-hint`} />
      <div>
        <label for={id}>{label}</label>
        <span class="checkbox-hint" id={`${id}-hint`}>{hint}</span>
      </div>
    </div>
  );
}

function VariantFields({ index, value, onChange, onRemove, removable, campaign, templates, templatesLoading, errors }: {
  index: number; value: VariantForm; onChange: (v: VariantForm) => void; onRemove: () => void; removable: boolean;
  campaign: CampaignValues; templates: Template[]; templatesLoading: boolean; errors: Record<string, string>;
}) {
  const key = VARIANT_KEYS[index]!;
  const group = useId();
  const err = (part: string) => errors[`variants.${index}.${part}`];
  const set = <K extends keyof VariantForm>(k: K) => (v: VariantForm[K]) => onChange({ ...value, [k]: v });
  const template = value.content === 'template' ? templates.find((t) => t.id === value.templateId) : undefined;
  // An empty field is the campaign's (or, for the subject, the variant's template's): its placeholder says which.
  const subjectOf = template?.subject || campaign.subject;
  const choose = (content: VariantForm['content']) => onChange({ ...value, content, body: content === 'own' && !value.body.trim() ? campaign.body : value.body });
  return (
    <fieldset class="ab-variant">
      <legend class="visually-hidden">Variant {key}</legend>
      <div class="ab-variant-head">
        <span class="ab-key" aria-hidden="true">{key}</span>
        <span class="ab-variant-title" aria-hidden="true">Variant {key}</span>
        {removable ? <Button variant="ghost" size="sm" onClick={onRemove} aria-label={`Remove variant ${key}`}><Icon name="trash" />Remove</Button> : null}
      </div>
      <div class="ab-variant-fields">
        <TextField label="Variant name" value={value.name} onValue={set('name')} error={err('name')} maxLength={100} placeholder={index === 0 ? 'Statement' : 'Question'}
          hint="Optional: for you, on the results." />
        <TextField label="From name" value={value.fromName} onValue={set('fromName')} error={err('fromName')} placeholder={campaign.fromName || 'The campaign’s'}
          hint="Empty: the campaign’s." />
        <TextField label="Subject" value={value.subject} onValue={set('subject')} error={err('subject')} fieldClass="ab-wide" placeholder={subjectOf || 'The campaign’s subject'}
          hint={template && !value.subject.trim() ? 'Empty: the template’s subject.' : 'Empty: the campaign’s subject.'} />
        <TextField label="Preview text" value={value.previewText} onValue={set('previewText')} error={err('previewText')} fieldClass="ab-wide"
          placeholder={campaign.previewText || 'None'} hint="Empty: the campaign’s preview text." />
      </div>
      <fieldset class="audience-choices ab-content-choices">
        <legend class="field-label">Message</legend>
        <Choice name={`${group}-content`} checked={value.content === 'campaign'} onChoose={() => choose('campaign')}
          label="The campaign’s" hint="The same body: only the fields above differ." />
        <Choice name={`${group}-content`} checked={value.content === 'own'} onChoose={() => choose('own')}
          label="Its own HTML" hint="A body of its own, starting from the campaign’s." />
        <Choice name={`${group}-content`} checked={value.content === 'template'} onChoose={() => choose('template')}
          label="A template" hint="Its subject and body; a subject above wins." />
      </fieldset>
      {value.content === 'own' ? (
        <TextAreaField label={`HTML body of variant ${key}`} mono rows={8} value={value.body} onValue={set('body')} error={err('body')} />
      ) : null}
      {value.content === 'template' ? (
        <TemplatePicker templates={templates} loading={templatesLoading} value={value.templateId} onValue={set('templateId')} error={err('templateId') ?? err('body')} />
      ) : null}
      {value.content === 'campaign' && (err('body') || err('templateId')) ? (
        <div class="field-error"><Icon name="alert" size={14} /><span>{err('body') ?? err('templateId')}</span></div>
      ) : null}
    </fieldset>
  );
}

export function AbTestSection({ value, onChange, errors, campaign, templates, templatesLoading, audience }: {
  value: AbForm; onChange: (f: AbForm) => void; errors: Record<string, string>; campaign: CampaignValues;
  templates: Template[]; templatesLoading: boolean;
  /** The audience's count now, when known. */
  audience: number | null;
}) {
  const set = <K extends keyof AbForm>(k: K) => (v: AbForm[K]) => onChange({ ...value, [k]: v });
  const n = value.variants.length;
  const settings = abSettings(value);
  const sectionError = errors.variants ?? errors.abTest;

  let summary = null;
  if (settings && audience !== null) {
    const plan = samplePlan(audience, settings.samplePercent, n);
    const least = leastFittingPercent(audience, n);
    summary = !sampleFits(audience, settings.samplePercent, n)
      ? <p class="ab-summary ab-summary-warn"><Icon name="alert" size={14} /><span>
          {`${settings.samplePercent} % of ${audience.toLocaleString()} contacts leaves a variant with nobody: `}
          {least !== null ? `${n} variants need at least ${least} % of this audience.` : `${n} variants need an audience of at least ${n * 2} contacts.`}
        </span></p>
      : <p class="ab-summary"><Icon name="users" size={14} /><span>{testSentence(settings, n, audience)}.
          {plan.perVariant < 100 ? ' With so few per variant, a difference is rarely sure: the page will say how sure it is.' : ''}</span></p>;
  } else if (settings) {
    summary = <p class="ab-summary muted">The counts follow once the audience is counted.</p>;
  }

  return (
    <section class="card" aria-labelledby="composer-ab">
      <div class="card-header"><h2 id="composer-ab">A/B test</h2><span class="muted small">Versions tried on a sample; the winner goes to the rest</span></div>
      <div class="card-body form">
        <Checkbox label="Test versions of this campaign" checked={value.on} onChecked={set('on')}
          hint={`Variants A and B (up to ${AB_LIMITS.maxVariants}) go to a share of the audience; after the wait the winner goes to everyone else, each contact once.`} />
        {sectionError ? <div class="field-error" role="alert"><Icon name="alert" size={14} /><span>{sectionError}</span></div> : null}
        {value.on ? (
          <>
            <div class="ab-variants">
              {value.variants.map((v, i) => (
                <VariantFields key={i} index={i} value={v} campaign={campaign} templates={templates} templatesLoading={templatesLoading} errors={errors}
                  onChange={(next) => set('variants')(value.variants.map((x, j) => (j === i ? next : x)))}
                  removable={n > AB_LIMITS.minVariants} onRemove={() => set('variants')(value.variants.filter((_, j) => j !== i))} />
              ))}
            </div>
            {n < AB_LIMITS.maxVariants ? (
              <div><Button size="sm" onClick={() => set('variants')([...value.variants, newVariant()])}><Icon name="plus" />Add variant {VARIANT_KEYS[n]}</Button></div>
            ) : <p class="muted small">{AB_LIMITS.maxVariants} variants is the most a test takes.</p>}

            <fieldset class="ab-settings">
              <legend class="field-label">How the test runs</legend>
              <div class="composer-row">
                <TextField label="Sample (% of the audience)" type="number" inputMode="numeric" min={AB_LIMITS.minPercent} max={AB_LIMITS.maxPercent} step={1}
                  value={value.samplePercent} onValue={set('samplePercent')} error={errors['abTest.samplePercent']} fieldClass="grow"
                  hint={`${AB_LIMITS.minPercent} to ${AB_LIMITS.maxPercent} %, split evenly between the variants${settings && audience !== null ? `: ${eachWords(samplePlan(audience, settings.samplePercent, n).shares)} now` : ''}.`} />
                <div class="ab-wait grow">
                  <TextField label="Wait" type="number" inputMode="numeric" min={1} step={1} value={value.waitAmount} onValue={set('waitAmount')}
                    error={errors['abTest.waitMinutes']} hint="10 minutes to 7 days, once the sample has left." fieldClass="grow" />
                  <SelectField label="Unit" value={value.waitUnit} onValue={(u) => set('waitUnit')(u as WaitUnit)}
                    options={[['minutes', 'Minutes'], ['hours', 'Hours'], ['days', 'Days']]} />
                </div>
              </div>
              <fieldset class="audience-choices">
                <legend class="field-label">The winner is</legend>
                <Choice name="ab-metric" checked={value.metric === 'opens'} onChoose={() => set('metric')('opens')}
                  label="The most opened" hint="The highest rate of unique opens among delivered emails; mail privacy proxies do not count." />
                <Choice name="ab-metric" checked={value.metric === 'clicks'} onChoose={() => set('metric')('clicks')}
                  label="The most clicked" hint="The highest rate of unique clicks among delivered emails; link scanners do not count." />
                <Choice name="ab-metric" checked={value.metric === 'manual'} onChoose={() => set('metric')('manual')}
                  label="The one I choose" hint={`You choose on the campaign’s page, with each variant’s figures; the rest waits for your choice${settings ? ` (give the figures ${waitWords(settings.waitMinutes)})` : ''}.`} />
                {errors['abTest.metric'] ? <div class="field-error"><Icon name="alert" size={14} /><span>{errors['abTest.metric']}</span></div> : null}
              </fieldset>
              <div aria-live="polite">{summary}</div>
            </fieldset>
          </>
        ) : null}
      </div>
    </section>
  );
}
