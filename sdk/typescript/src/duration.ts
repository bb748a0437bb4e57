// Durations and times as the protocol writes them, the same as the Go SDK
// does: a span is sent as a JSON number of seconds, an instant as RFC 3339
// in UTC with no trailing zeros in its fraction.

/** A span of time: a number of seconds (30, 1.5) or a duration string ("30s", "10m", "1h30m", "2d"). */
export type Duration = number | string;

const unitNanos: Record<string, number> = {
  ns: 1,
  us: 1e3,
  "µs": 1e3,
  "μs": 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/**
 * parseDuration reads a non-negative duration string as Go's
 * time.ParseDuration does ("300ms", "10m", "1h30m"), optionally preceded by
 * a number of days ("1d", "1.5d", "2d12h"), and returns seconds. Signs and
 * bare numbers are refused. It returns undefined for an invalid string.
 */
export function parseDuration(s: string): number | undefined {
  if (s === "" || s[0] === "+" || s[0] === "-") return undefined;
  let rest = s;
  let nanos = 0;
  const d = s.indexOf("d");
  if (d >= 0) {
    const days = s.slice(0, d);
    if (!/^(\d+|\d+\.\d+)$/.test(days)) return undefined;
    nanos = Number(days) * 86400e9;
    rest = s.slice(d + 1);
  }
  if (rest !== "") {
    if (rest === "0") return nanos / 1e9;
    const re = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
    let pos = 0;
    while (pos < rest.length) {
      re.lastIndex = pos;
      const m = re.exec(rest);
      if (!m) return undefined;
      nanos += Number(m[1]) * (unitNanos[m[2]!] ?? NaN);
      pos = re.lastIndex;
    }
  }
  if (!Number.isFinite(nanos)) return undefined;
  return Math.round(nanos) / 1e9;
}

/** toSeconds converts a Duration to seconds, or undefined when it is invalid or negative. */
export function toSeconds(d: Duration): number | undefined {
  if (typeof d === "number") return Number.isFinite(d) && d >= 0 ? d : undefined;
  if (typeof d === "string") return parseDuration(d);
  return undefined;
}

/** rfc3339 writes t in UTC as Go's time.RFC3339Nano does: "2026-01-02T09:00:00Z", "…:00.5Z". */
export function rfc3339(t: Date): string {
  const iso = t.toISOString(); // 2026-01-02T09:00:00.000Z
  const [main, frac] = [iso.slice(0, 19), iso.slice(20, 23).replace(/0+$/, "")];
  return main + (frac ? "." + frac : "") + "Z";
}

/** goDuration formats whole seconds as Go's time.Duration.String does: "5m0s", "-10m0s", "1h0m0s". */
export function goDuration(seconds: number): string {
  if (seconds === 0) return "0s";
  const neg = seconds < 0;
  let s = Math.abs(seconds);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  let out = h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
  return neg ? "-" + out : out;
}

/** goQuote quotes s as Go's %q verb does, for messages both SDKs write alike. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    switch (ch) {
      case '"': out += '\\"'; continue;
      case "\\": out += "\\\\"; continue;
      case "\x07": out += "\\a"; continue;
      case "\b": out += "\\b"; continue;
      case "\f": out += "\\f"; continue;
      case "\n": out += "\\n"; continue;
      case "\r": out += "\\r"; continue;
      case "\t": out += "\\t"; continue;
      case "\v": out += "\\v"; continue;
    }
    if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + '"';
}
