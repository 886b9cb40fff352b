// Display helpers: numbers from the API are shown, never trusted to be well-formed.

const finite = (value) => typeof value === 'number' && Number.isFinite(value);

export const fmt = {
  time: (iso) => {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? '—' : date.toLocaleTimeString(undefined, { hour12: false });
  },
  dateTime: (iso) => {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? '—' : date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  },
  ms: (value) => (finite(value) ? `${Math.round(value)} ms` : '—'),
  int: (value) => (finite(value) ? Math.round(value).toLocaleString('en-US') : '—'),
  usd: (value) => (finite(value) ? `$${value < 0.01 && value > 0 ? value.toFixed(6) : value.toFixed(4)}` : '—'),
  pct: (value) => (finite(value) ? `${(value * 100).toFixed(1)}%` : '—'),
  text: (value) => (value === null || value === undefined || value === '' ? '—' : String(value)),
};

export function statusClass(status) {
  if (!finite(status)) return 'status';
  if (status >= 500) return 'status status-5xx';
  if (status >= 400) return 'status status-4xx';
  return 'status status-2xx';
}
