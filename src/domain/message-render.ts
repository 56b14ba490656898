// TEMPORARY STUB: replaced by the renderers of branch sched17 at merge.
import { renderEmail, webhookPayload, type Notification } from './render.js';
import type { Hold } from './schedule.js';

export interface MessageContent {
  id: string;
  hold: Hold | null;
  notifications: Notification[];
}

export function renderWebhookMessage(m: MessageContent): unknown {
  if (m.notifications.length === 1) return webhookPayload(m.notifications[0]!);
  return {
    type: 'warning.batch',
    timestamp: new Date().toISOString(),
    data: {
      notifications: m.notifications.map((n) => {
        const body = webhookPayload(n);
        return { type: body.type, ...body.data };
      }),
    },
  };
}

export function renderEmailMessage(
  m: MessageContent,
  _opts: { unsubscribeUrl?: string } = {},
): { subject: string; text: string; html: string } {
  const parts = m.notifications.map(renderEmail);
  if (parts.length === 1) return parts[0]!;
  return {
    subject: `${parts.length} 条预警：${parts[0]!.subject}`,
    text: parts.map((p) => p.text).join('\n\n'),
    html: parts.map((p) => p.html).join('<hr>'),
  };
}
