/** The declarations of the reference data operations (who may call, whose ids, what is audited), for their API routes. */
import { operation } from '../access/declaration.ts';

export const listBackends = operation({ access: 'org_viewer' });
export const listWorkspaces = operation({ access: 'org_viewer' });
export const listMerkmale = operation({ access: 'org_viewer' });
