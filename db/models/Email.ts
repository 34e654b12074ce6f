import { BaseModel } from './BaseModel';

export type EmailStatus = 'QUEUED' | 'SENDING' | 'SENT' | 'FAILED' | 'CANCELLED';

export class Email extends BaseModel {
  static override tableName = 'emails';
  static override jsonAttributes = ['headers'];

  id!: string;
  projectId!: string;
  contactId!: string;
  templateId!: string | null;
  fromEmail!: string;
  fromName!: string | null;
  replyTo!: string | null;
  toEmail!: string;
  toName!: string | null;
  subject!: string;
  html!: string;
  headers!: Record<string, string>;
  attachmentIds!: string[];
  status!: EmailStatus;
  attempts!: number;
  messageId!: string | null;
  error!: string | null;
  eventId!: string;
  dispatchedAt!: Date | null;
  sentAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}
