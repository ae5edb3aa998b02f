/**
 * The portal as a browser uses it, in process: a cookie jar, forms posted URL-encoded, and
 * a client address of its own (the sign-in limit counts per address).
 */
import { expect } from 'vitest';
import type { App } from '../../api/app.ts';

export class PortalClient {
  cookies = new Map<string, string>();
  /** The Set-Cookie headers of the last answer. */
  lastSetCookies: string[] = [];

  constructor(
    private readonly app: App,
    readonly address: string,
    /** Sent as `Accept-Language` with every request when set. */
    readonly acceptLanguage?: string,
  ) {}

  async request(method: string, path: string, form?: Record<string, string>) {
    const headers: Record<string, string> = { 'x-forwarded-for': this.address };
    if (this.acceptLanguage !== undefined) headers['accept-language'] = this.acceptLanguage;
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    }
    const res = await this.app.request(`http://fleet.test${path}`, { method, headers, body });
    this.lastSetCookies = res.headers.getSetCookie();
    for (const c of this.lastSetCookies) {
      const [name, value] = c.split(';')[0]!.split('=') as [string, string];
      if (/max-age=0/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, location: res.headers.get('location'), text: await res.text(), headers: res.headers };
  }

  get = (path: string) => this.request('GET', path);

  /** The CSRF token of the page's first form. */
  static csrf(html: string): string {
    const m = /name="_csrf" value="([^"]+)"/.exec(html);
    if (!m) throw new Error('no CSRF field on the page');
    return m[1]!;
  }

  /** Opens the login page and posts the key with its CSRF token; the POST's answer. */
  async signIn(key: string) {
    const form = await this.get('/portal/login');
    expect(form.status).toBe(200);
    return this.request('POST', '/portal/login', { _csrf: PortalClient.csrf(form.text), key });
  }
}
