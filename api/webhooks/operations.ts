/**
 * The declarations of the webhook operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const createWebhook = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'webhook.create',
});
export const listWebhooks = operation({ access: 'org_admin', tenant: { param: { id: 'organization' } } });
export const deleteWebhook = operation({
  access: 'org_admin',
  tenant: { param: { id: 'webhook' } },
  audit: 'webhook.delete',
});
export const listWebhookDeliveries = operation({ access: 'org_admin', tenant: { param: { id: 'webhook' } } });
export const listWebhookDeliveryAttempts = operation({
  access: 'org_admin',
  tenant: { param: { id: 'webhook', delivery_id: 'webhook_delivery' } },
});
export const testWebhook = operation({
  access: 'org_admin',
  tenant: { param: { id: 'webhook' } },
  audit: 'webhook.test',
});
