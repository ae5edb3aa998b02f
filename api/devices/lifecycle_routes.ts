/** Device lifecycle and reads: deprovision, reprovision, archive, hardware, events (issue 5). */
import { newRouter } from '../http/openapi.ts';

export function deviceLifecycleRoutes() {
  return newRouter();
}
