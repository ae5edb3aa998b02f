/** A past moment as "vor 3 Minuten" / "3 minutes ago", the exact time on hover and for machines (`<time datetime>`). */
import { formatExactTime, t } from './i18n/index.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How long ago `at` was at `now`, in the largest whole unit, rounded down. */
export function relativeTime(at: Date, now: Date): string {
  const text = t().common.time;
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
  return text.ago[unit](Math.floor(ms / size));
}

/** The moment as a relative time, its exact time in the title (hover) and `datetime`; "–" for none. */
export function RelativeTime(props: { at: Date | null; now: Date }) {
  if (props.at === null) return <span class="muted">{t().common.time.never}</span>;
  return (
    <time datetime={props.at.toISOString()} title={formatExactTime(props.at)}>
      {relativeTime(props.at, props.now)}
    </time>
  );
}
