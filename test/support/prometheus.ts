/**
 * A small parser of Prometheus's text exposition format (prom-client ships none): enough for the tests to read what
 * GET /metrics serves. Each sample line is `name{label="value",…} value`; `# HELP` and `# TYPE` lines are kept apart.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  types: Map<string, string>;
  help: Map<string, string>;
  /** Samples of one series name, whose labels include `labels`. */
  find(name: string, labels?: Record<string, string>): Sample[];
  /** The one sample of `name` with exactly these labels among its own (others allowed), or undefined. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;

function parseValue(s: string): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s.toLowerCase() === 'nan') return NaN; // prom-client writes "Nan"; Prometheus reads NaN case-insensitively (Go's ParseFloat)
  const n = Number(s);
  if (Number.isNaN(n)) throw new Error(`bad value: ${s}`);
  return n;
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      (meta[1] === 'TYPE' ? types : help).set(meta[2]!, meta[3]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      LABEL.lastIndex = 0;
      let l: RegExpExecArray | null;
      while (LABEL.lastIndex < m[2].length && (l = LABEL.exec(m[2]))) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      if (LABEL.lastIndex !== m[2].length) throw new Error(`bad labels: ${line}`);
    }
    const value = parseValue(m[3]!);
    samples.push({ name: m[1]!, labels, value });
  }
  const find = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    samples, types, help, find,
    value(name, labels = {}) {
      const found = find(name, labels);
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
      return found[0]?.value;
    },
  };
}
