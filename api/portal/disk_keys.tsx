/**
 * A device's disk recovery keys on its page (operator and org admins only, as the API) and
 * the reveal form with its reason. The revealed key is rendered once, never flashed (a
 * flash would keep it in the session) and never cached.
 */
import { Hono } from 'hono';
import type { Db } from '../db/client.ts';
import * as diskKeyOps from '../disk_keys/operations.ts';
import { listKeys } from '../disk_keys/repo.ts';
import { reveal } from '../disk_keys/service.ts';
import { ApiError } from '../http/errors.ts';
import { type PortalEnv, portalRead, postWrite } from './access.ts';
import { formFields, render } from './http.tsx';
import { formatTime, t } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';
import type { PortalSession } from './session.ts';
import type { Context } from 'hono';

/** The keys of the device for its page; call only for a session that may write. */
export async function deviceDiskKeys(c: Context<PortalEnv>, deviceId: string) {
  const db: Db = await portalRead(c, diskKeyOps.listDiskKeys, { param: { id: deviceId } });
  return listKeys(db, deviceId, null, 100);
}

export function DiskKeys(props: { session: PortalSession; keys: Awaited<ReturnType<typeof listKeys>> }) {
  const text = t().deviceDetails.diskKeys;
  if (props.keys.length === 0) return <p class="empty">{text.none}</p>;
  return (
    <div class="table-wrap">
      <table data-section="disk-keys">
        <thead>
          <tr>
            <th scope="col">{text.volume}</th>
            <th scope="col">{text.slot}</th>
            <th scope="col">{text.status}</th>
            <th scope="col">{text.escrowed}</th>
            <th scope="col">{text.verified}</th>
            <th scope="col">{text.revealed}</th>
            <th scope="col">{text.reveal}</th>
          </tr>
        </thead>
        <tbody>
          {props.keys.map((k) => (
            <tr data-disk-key={k.id}>
              <td>{k.luks_uuid}</td>
              <td>{k.keyslot}</td>
              <td data-field="status" data-status={k.status}>
                {text.statuses[k.status] ?? k.status}
              </td>
              <td>{formatTime(k.escrowed_at)}</td>
              <td>{k.verified_at ? formatTime(k.verified_at) : '–'}</td>
              <td>{k.revealed_at ? formatTime(k.revealed_at) : '–'}</td>
              <td>
                <form method="post" action={`/portal/disk-keys/${k.id}/reveal`}>
                  <CsrfField session={props.session} />
                  <label for={`reason-${k.id}`}>{text.reason}</label>{' '}
                  <input id={`reason-${k.id}`} name="reason" required minlength={3} maxlength={500} />{' '}
                  <button type="submit" aria-label={text.revealLabel(k.keyslot)}>
                    {text.reveal}
                  </button>
                </form>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function diskKeyRoutes() {
  const app = new Hono<PortalEnv>();
  postWrite(app, '/disk-keys/:id/reveal', diskKeyOps.revealDiskKey, async (c, write) => {
    const id = c.req.param('id');
    const reason = ((await formFields(c)).reason ?? '').trim();
    const text = t().deviceDetails.diskKeys;
    const result = await write({ param: { id } }, async (tx) => {
      // Checked once the caller may reveal: a viewer learns nothing of the form's rules.
      if (reason.length < 3 || reason.length > 500) {
        throw new ApiError('invalid_request', text.badReason, {
          details: [{ path: ['reason'], message: text.badReason }],
        });
      }
      const revealed = await reveal(tx, c.get('deps').config, id, reason);
      return { audit: revealed.audit, result: revealed };
    });
    c.header('Cache-Control', 'no-store');
    return render(
      c,
      <Layout title={text.title} session={c.get('session')}>
        <p>{text.shown}</p>
        <p>
          <code data-field="recovery-key">{result.recoveryKey}</code>
        </p>
        <p>
          <a href={`/portal/devices/${result.row.device_id}`}>{text.back}</a>
        </p>
      </Layout>,
    );
  });
  return app;
}
