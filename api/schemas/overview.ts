import Joi from 'joi';
import { OVERVIEW_WINDOWS, type OverviewWindow } from '../../emails/overview';

/** GET /stats/overview: the window, in days (7, 30 or 90; 30 when left out). */
export interface OverviewQuery {
  days: OverviewWindow;
}

export const overviewQuerySchema = Joi.object<OverviewQuery, true>({
  days: Joi.number().integer().valid(...OVERVIEW_WINDOWS).default(30).description('The window: the last 7, 30 or 90 UTC days, today included.'),
});
