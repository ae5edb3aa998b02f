/**
 * The device page's readable parts: the hardware the agent reported as a table (whatever
 * keys it sent; the raw JSON only behind a disclosure) and the Merkmal events with their
 * cause, actor and the agent's message.
 */
import type { Actor } from '../access/declaration.ts';
import type { EventRow } from '../devices/lifecycle_repo.ts';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { isReportedEvent, reportLabel, reportMessage } from './labels.ts';

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: Json): string | null =>
  typeof v === 'string' && v.trim() !== '' ? v : typeof v === 'number' ? String(v) : null;
const num = (v: Json): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const joined = (...parts: Array<string | null>) => parts.filter((p) => p !== null).join(' ') || null;
/** A value the table does not know how to read, shown as compact JSON. */
const asText = (v: Json): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** A size the agent gives in whole units (GB of a disk, GiB of memory), one decimal at most. */
const inUnit = (n: number, unit: string) => `${formatNumber(n, { maximumFractionDigits: 1 })} ${unit}`;

function cpuText(cpu: Json): string | null {
  if (!isObject(cpu)) return str(cpu) ?? (cpu === undefined ? null : asText(cpu));
  const cores = num(cpu.cores);
  const model = str(cpu.model);
  const rest = cores === null ? null : t().deviceDetails.hardware.cores(cores);
  return joined(model, model && rest ? `(${rest})` : rest);
}

function memoryText(hw: Record<string, Json>): string | null {
  const mb = num(hw.memory_mb);
  if (mb !== null) return inUnit(mb / 1024, 'GiB');
  const bytes = num(hw.memory_bytes) ?? num(hw.memory);
  if (bytes !== null) return inUnit(bytes / 1024 ** 3, 'GiB');
  const given = hw.memory_mb ?? hw.memory_bytes ?? hw.memory;
  return given === undefined ? null : asText(given);
}

function diskTexts(disks: Json): string[] | null {
  if (disks === undefined) return null;
  if (!Array.isArray(disks)) return [asText(disks)];
  return disks.slice(0, 64).map((d) => {
    if (!isObject(d)) return asText(d);
    const size = num(d.size_gb);
    const parts = [str(d.name), size === null ? null : inUnit(size, 'GB'), str(d.model)].filter((p) => p !== null);
    return parts.length > 0 ? parts.join(' · ') : asText(d);
  });
}

/** The keys the table reads itself; any other is listed under its own name. */
const readKeys = new Set(['dmi', 'cpu', 'memory_mb', 'memory_bytes', 'memory', 'disks', 'os', 'kernel', 'hostname']);

/** The hardware object as rows of the table: label and text (a list for the disks). */
export function hardwareRows(hardware: Json): Array<{ key: string; label: string; value: string | string[] }> {
  if (!isObject(hardware)) return [];
  const text = t().deviceDetails.hardware;
  const dmi = isObject(hardware.dmi) ? hardware.dmi : {};
  const rows: Array<{ key: string; label: string; value: string | string[] | null }> = [
    {
      key: 'model',
      label: text.vendorModel,
      value: joined(str(dmi.sys_vendor), str(dmi.product_name), str(dmi.product_version)),
    },
    { key: 'dmi_serial', label: text.dmiSerial, value: str(dmi.product_serial) },
    { key: 'board', label: text.board, value: str(dmi.board_name) },
    { key: 'bios', label: text.bios, value: str(dmi.bios_version) },
    { key: 'cpu', label: text.cpu, value: cpuText(hardware.cpu) },
    { key: 'memory', label: text.memory, value: memoryText(hardware) },
    { key: 'disks', label: text.disks, value: diskTexts(hardware.disks) },
    { key: 'os', label: text.os, value: hardware.os === undefined ? null : (str(hardware.os) ?? asText(hardware.os)) },
    { key: 'kernel', label: text.kernel, value: str(hardware.kernel) },
    { key: 'hostname', label: text.hostname, value: str(hardware.hostname) },
    ...Object.entries(hardware)
      .filter(([k]) => !readKeys.has(k))
      .map(([k, v]) => ({ key: k, label: k, value: asText(v) })),
  ];
  return rows.filter((r): r is { key: string; label: string; value: string | string[] } => r.value !== null);
}

export function HardwareTable(props: { hardware: Json; reportedAt: Date | null; agentVersion: string | null }) {
  const rows = hardwareRows(props.hardware);
  const text = t().deviceDetails.hardware;
  return (
    <>
      <div class="table-wrap">
        <table class="hardware">
          <tbody>
            {rows.map((r) => (
              <tr data-hardware={r.key}>
                <th scope="row">{r.label}</th>
                <td>
                  {Array.isArray(r.value) ? (
                    r.value.length === 0 ? (
                      '–'
                    ) : (
                      <ul class="plain">
                        {r.value.map((v) => (
                          <li>{v}</li>
                        ))}
                      </ul>
                    )
                  ) : (
                    r.value
                  )}
                </td>
              </tr>
            ))}
            <tr data-hardware="agent_version">
              <th scope="row">{text.agentVersion}</th>
              <td>{props.agentVersion ?? text.unknown}</td>
            </tr>
            {props.reportedAt ? (
              <tr data-hardware="reported_at">
                <th scope="row">{text.reportedAt}</th>
                <td>{formatTime(props.reportedAt)}</td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
      {props.hardware ? (
        <details>
          <summary>{text.raw}</summary>
          <pre>{JSON.stringify(props.hardware, null, 2)}</pre>
        </details>
      ) : (
        <p class="empty">{text.none}</p>
      )}
    </>
  );
}

/** An event's type as the page names it: a report as the agent's report, a selection as chosen; else its key. */
const eventLabel = (type: string): string =>
  isReportedEvent(type) ? reportLabel(type) : (t().deviceDetails.events.types[type] ?? type);

function actorText(actor: Json): string | null {
  if (!isObject(actor)) return null;
  const text = t().deviceDetails.events;
  const a = actor as Actor;
  if (a.type === 'api_key') return typeof a.name === 'string' ? a.name : null;
  return a.type === 'operator' ? text.operator : a.type === 'system' ? text.system : null;
}

/** Cause, actor and message of an event, by its payload. */
function eventParts(
  event: Pick<EventRow, 'type' | 'payload'>,
  sourceName: (cause: string, id: string) => string | undefined,
) {
  const text = t().deviceDetails.events;
  const p = isObject(event.payload) ? event.payload : {};
  if (isReportedEvent(event.type)) {
    return { cause: text.reportCause, actor: text.agent, message: reportMessage(p.detail) };
  }
  const cause = typeof p.cause === 'string' ? p.cause : null;
  const source = cause && typeof p.source_id === 'string' ? sourceName(cause, p.source_id) : undefined;
  const label = cause === null ? null : (text.causes[cause] ?? cause);
  return {
    cause: joined(label, source ? text.source(source) : null, p.unset === true ? text.unset : null),
    actor: actorText(p.actor),
    message: null,
  };
}

export function EventTable(props: {
  events: EventRow[];
  sourceName: (cause: string, id: string) => string | undefined;
}) {
  const text = t().deviceDetails.events;
  if (props.events.length === 0) return <p class="empty">{text.none}</p>;
  return (
    <div class="table-wrap">
      <table class="events">
        <thead>
          <tr>
            <th scope="col">{text.time}</th>
            <th scope="col">{text.merkmal}</th>
            <th scope="col">{text.event}</th>
            <th scope="col">{text.cause}</th>
            <th scope="col">{text.actor}</th>
            <th scope="col">{text.message}</th>
          </tr>
        </thead>
        <tbody>
          {props.events.map((ev) => {
            const parts = eventParts(ev, props.sourceName);
            return (
              <tr data-event-type={ev.type}>
                <td>{formatTime(ev.created_at)}</td>
                <td>{ev.merkmal}</td>
                <td>{eventLabel(ev.type)}</td>
                <td data-field="cause">{parts.cause ?? '–'}</td>
                <td data-field="actor">{parts.actor ?? '–'}</td>
                <td data-field="message" class="report-message">
                  {parts.message ?? ''}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
