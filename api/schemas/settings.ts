import Joi from 'joi';
import type { SettingsPatch, TrackChoice } from '../../tracking/settings';

const choice = Joi.object<Partial<TrackChoice>, true>({ opens: Joi.boolean(), clicks: Joi.boolean() }).min(1);

/** PATCH /settings: only the settings given change. */
export const settingsPatchSchema = Joi.object<SettingsPatch, true>({
  name: Joi.string().trim().min(1).max(100).example('Acme'),
  tracking: Joi.object({ send: choice, campaigns: choice }).min(1),
  requireTwoFactor: Joi.boolean(),
  retentionDays: Joi.number().integer().min(1).max(36_500).allow(null).example(90)
    .description("The project's own retention in days, at most the installation's (RETENTION_DAYS, 422 above it); null: the installation's."),
}).min(1);
