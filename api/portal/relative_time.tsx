/** A past moment as "vor 3 Minuten", the exact time on hover and for machines (`<time datetime>`). */

const text = {
  never: '–',
  justNow: 'gerade eben',
  inFuture: 'in der Zukunft',
  ago: (n: number, one: string, many: string) => `vor ${n} ${n === 1 ? one : many}`,
  units: {
    minute: ['Minute', 'Minuten'],
    hour: ['Stunde', 'Stunden'],
    day: ['Tag', 'Tagen'],
    month: ['Monat', 'Monaten'],
    year: ['Jahr', 'Jahren'],
  },
} as const;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How long ago `at` was at `now`, in the largest whole unit, rounded down. */
export function relativeTime(at: Date, now: Date): string {
  const ms = now.getTime() - at.getTime();
  // A clock a little ahead of the server's (the heartbeat's batch) still reads as now.
  if (ms < -MINUTE) return text.inFuture;
  if (ms < MINUTE) return text.justNow;
  const [unit, size] =
    ms < HOUR
      ? (['minute', MINUTE] as const)
      : ms < DAY
        ? (['hour', HOUR] as const)
        : ms < 30 * DAY
          ? (['day', DAY] as const)
          : ms < 365 * DAY
            ? (['month', 30 * DAY] as const)
            : (['year', 365 * DAY] as const);
  const [one, many] = text.units[unit];
  return text.ago(Math.floor(ms / size), one, many);
}

/** To the second, in UTC as every time of the portal. */
function exactTime(at: Date): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** The moment as a relative time, its exact time in the title (hover) and `datetime`; "–" for none. */
export function RelativeTime(props: { at: Date | null; now: Date }) {
  if (props.at === null) return <span class="muted">{text.never}</span>;
  return (
    <time datetime={props.at.toISOString()} title={exactTime(props.at)}>
      {relativeTime(props.at, props.now)}
    </time>
  );
}
