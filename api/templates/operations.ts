/** The declarations of the template operations (who may call, whose ids, what is audited), for their API routes. */
import { operation } from '../access/declaration.ts';

export const listTemplates = operation({ access: 'org_viewer' });
export const getTemplate = operation({ access: 'org_viewer', tenant: { param: { id: null } } });
