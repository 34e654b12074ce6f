import type { Knex } from 'knex';
import * as foundation from './20261122000001_foundation';
import * as messaging from './20261122000002_messaging';
import * as audiences from './20261122000003_audiences';
import * as campaigns from './20261122000004_campaigns';
import * as deliveryQueue from './20261122000005_delivery_queue';
import * as domainsDkim from './20261122000006_domains_dkim';
import * as automations from './20261122000007_automations';
import * as emailsUndispatched from './20261123000001_emails_undispatched';
import * as deliveryWindow from './20261123000002_delivery_window';
import * as workerLiveness from './20261123000003_worker_liveness';
import * as templateBodyType from './20261123000004_template_body_type';
import * as emailListIndexes from './20261124000001_email_list_indexes';
import * as tracking from './20261124000002_tracking';
import * as webhooks from './20261124000003_webhooks';
import * as rawMessages from './20261124000004_raw_messages';
import * as suppressions from './20261124000005_suppressions';
import * as eventOutbox from './20261125000001_event_outbox';
import * as metricsIndexes from './20261126100001_metrics_indexes';
import * as retryUnless from './20261127000001_retry_unless';
import * as clusterSettings from './20261128000001_cluster_settings';
import * as trackingWindows from './20261129000001_tracking_windows';
import * as people from './20261130000001_people';
import * as keysAudit from './20261130000002_keys_audit';
import * as loginThrottle from './20261130000003_login_throttle';
import * as twoFactor from './20261130000004_two_factor';
import * as dailyStats from './20261201000001_daily_stats';
import * as campaignEngagement from './20261202000001_campaign_engagement';
import * as campaignStats from './20261203000001_campaign_stats';
import * as campaignTemplate from './20261203000002_campaign_template';
import * as contactImports from './20261204000001_contact_imports';
import * as contactImportSeenCleanup from './20261206000001_contact_import_seen_cleanup';
import * as contactErasure from './20261204000002_contact_erasure';
import * as inbound from './20261205000001_inbound';
import * as inboundMore from './20261205000002_inbound_more';
import * as campaignOutcomes from './20261206000010_campaign_outcomes';
import * as abCampaigns from './20261207000001_ab_campaigns';
import * as inboundLz4 from './20261207000020_inbound_lz4';
import * as retentionPartitions from './20261208000001_retention_partitions';
import * as inboundRawIndex from './20261209000001_inbound_raw_index';
import * as segmentMemberCounts from './20261210000001_segment_member_counts';
import * as contactSearchPendingList from './20261211000001_contact_search_pending_list';
import * as contactSearchEmailFirst from './20261212000001_contact_search_email_first';
import * as deliveryWindowWaiters from './20261213000001_delivery_window_waiters';

/**
 * The migrations, listed explicitly rather than discovered by scanning a directory: the same list works under
 * tsx, Jest and a bundled build, and a migration can never be skipped by a file-extension mismatch.
 * Append new migrations at the end; never rename or reorder existing ones.
 */
const migrations: Record<string, Knex.Migration> = {
  '20261122000001_foundation': foundation,
  '20261122000002_messaging': messaging,
  '20261122000003_audiences': audiences,
  '20261122000004_campaigns': campaigns,
  '20261122000005_delivery_queue': deliveryQueue,
  '20261122000006_domains_dkim': domainsDkim,
  '20261122000007_automations': automations,
  '20261123000001_emails_undispatched': emailsUndispatched,
  '20261123000002_delivery_window': deliveryWindow,
  '20261123000003_worker_liveness': workerLiveness,
  '20261123000004_template_body_type': templateBodyType,
  '20261124000001_email_list_indexes': emailListIndexes,
  '20261124000002_tracking': tracking,
  '20261124000003_webhooks': webhooks,
  '20261124000004_raw_messages': rawMessages,
  '20261124000005_suppressions': suppressions,
  '20261125000001_event_outbox': eventOutbox,
  '20261126100001_metrics_indexes': metricsIndexes,
  '20261127000001_retry_unless': retryUnless,
  '20261128000001_cluster_settings': clusterSettings,
  '20261129000001_tracking_windows': trackingWindows,
  '20261130000001_people': people,
  '20261130000002_keys_audit': keysAudit,
  '20261130000003_login_throttle': loginThrottle,
  '20261130000004_two_factor': twoFactor,
  '20261201000001_daily_stats': dailyStats,
  '20261202000001_campaign_engagement': campaignEngagement,
  '20261203000001_campaign_stats': campaignStats,
  '20261203000002_campaign_template': campaignTemplate,
  '20261204000001_contact_imports': contactImports,
  '20261204000002_contact_erasure': contactErasure,
  '20261205000001_inbound': inbound,
  '20261205000002_inbound_more': inboundMore,
  '20261206000001_contact_import_seen_cleanup': contactImportSeenCleanup,
  '20261206000010_campaign_outcomes': campaignOutcomes,
  '20261207000001_ab_campaigns': abCampaigns,
  '20261207000020_inbound_lz4': inboundLz4,
  '20261208000001_retention_partitions': retentionPartitions,
  '20261209000001_inbound_raw_index': inboundRawIndex,
  '20261210000001_segment_member_counts': segmentMemberCounts,
  '20261211000001_contact_search_pending_list': contactSearchPendingList,
  '20261212000001_contact_search_email_first': contactSearchEmailFirst,
  '20261213000001_delivery_window_waiters': deliveryWindowWaiters,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
