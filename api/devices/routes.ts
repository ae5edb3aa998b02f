/** Routes of this feature (filled in by its issue). */
import { newRouter } from '../http/openapi.ts';

export function deviceRoutes() {
  return newRouter();
}
