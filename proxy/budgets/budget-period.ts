import type { UsageLimitPolicy } from './usage-limit-schema.ts';

// Which budget period a moment falls in: calendar days, weeks (from Monday) and months in
// the policy's time zone, read with Intl (no library), or one period forever. The period id
// is part of the counter key, so a new period starts from zero without any reset job.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', weekday: 'short' });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

const WEEKDAY: Readonly<Record<string, number>> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4, Sat: 5, Sun: 6 };
const DAY_MS = 86_400_000;

/** The local calendar date (and weekday, Monday = 0) of `atMs` in `timeZone`. */
export function localDate(atMs: number, timeZone: string): { year: number; month: number; day: number; weekday: number } {
  let year = 0;
  let month = 0;
  let day = 0;
  let weekday = 0;
  for (const part of formatterOf(timeZone).formatToParts(atMs)) {
    if (part.type === 'year') year = Number(part.value);
    else if (part.type === 'month') month = Number(part.value);
    else if (part.type === 'day') day = Number(part.value);
    else if (part.type === 'weekday') weekday = WEEKDAY[part.value] ?? 0;
  }
  return { year, month, day, weekday };
}

/** `2026-11-26` (daily), `w2026-11-23` (the week's Monday), `m2026-11` (monthly), `all` (never). */
export function periodOf(policy: Pick<UsageLimitPolicy, 'periodic_reset' | 'time_zone'>, atMs: number): string {
  if (policy.periodic_reset === 'never') return 'all';
  const { year, month, day, weekday } = localDate(atMs, policy.time_zone);
  if (policy.periodic_reset === 'monthly') return `m${year}-${pad(month)}`;
  if (policy.periodic_reset === 'daily') return `${year}-${pad(month)}-${pad(day)}`;
  const monday = new Date(Date.UTC(year, month - 1, day) - weekday * DAY_MS);
  return `w${monday.getUTCFullYear()}-${pad(monday.getUTCMonth() + 1)}-${pad(monday.getUTCDate())}`;
}

/** How long a period's counter is kept after its last write (0: forever). Longer than the period, whatever the zone. */
export function retentionSeconds(policy: Pick<UsageLimitPolicy, 'periodic_reset'>): number {
  switch (policy.periodic_reset) {
    case 'daily':
      return 3 * 86_400;
    case 'weekly':
      return 15 * 86_400;
    case 'monthly':
      return 63 * 86_400;
    default:
      return 0;
  }
}

function pad(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}
