export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '–';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let v = Math.abs(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const s = i === 0 ? String(Math.round(v)) : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  return `${n < 0 ? '-' : ''}${s} ${units[i]}`;
}

export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '–';
  }
  return Math.round(n).toLocaleString('en-US');
}

/** A compact count: 1.2K, 3.4M, 5G (decimal, as the capacity inputs read them). */
export function formatCompact(n: number): string {
  const a = Math.abs(n);
  const f = (v: number, s: string) => `${Number(v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2))}${s}`;
  if (a >= 1e12) return f(n / 1e12, 'T');
  if (a >= 1e9) return f(n / 1e9, 'G');
  if (a >= 1e6) return f(n / 1e6, 'M');
  if (a >= 1e3) return f(n / 1e3, 'K');
  return String(Math.round(n));
}

/** A ratio 0..1 as a percentage; null/undefined (nothing queried) as a dash. */
export function formatRate(r: number | null | undefined, digits = 1): string {
  if (r === null || r === undefined || !Number.isFinite(r)) {
    return '–';
  }
  return `${(r * 100).toFixed(digits)} %`;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) {
    return '–';
  }
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function shortTime(t: number | Date, spanMs: number): string {
  const d = typeof t === 'number' ? new Date(t) : t;
  if (spanMs > 2 * 24 * 3600_000) {
    return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
  }
  return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

export function sumValues(r: Record<string, number> | null | undefined): number {
  return Object.values(r ?? {}).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
}

/** OUIA attributes for PatternFly components that take no ouiaId prop (Form, Card…). */
export function ouia(id: string, type = 'PF6/Form'): Record<string, string> {
  return { 'data-ouia-component-id': id, 'data-ouia-component-type': type };
}
