// The Prometheus text exposition format (version 0.0.4) as /metrics serves it, parsed in the
// page: samples by metric name, and histogram quantiles computed the way PromQL's
// histogram_quantile() does (linear interpolation inside the bucket holding the rank). No DOM:
// the Node tests import this file as it is.

// text -> Map(name -> [{labels: {k: v}, value: Number}]). Comments, blank and malformed lines are
// skipped; label values are unescaped (\\, \", \n).
export function parsePrometheus(text) {
  const families = new Map();
  for (const raw of String(text).split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const sample = parseSample(line);
    if (!sample) continue;
    if (!families.has(sample.name)) families.set(sample.name, []);
    families.get(sample.name).push({ labels: sample.labels, value: sample.value });
  }
  return families;
}

function parseSample(line) {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
  if (!m) return null;
  const name = m[1];
  let i = name.length;
  const labels = {};
  if (line[i] === '{') {
    i++;
    for (;;) {
      while (line[i] === ' ' || line[i] === ',') i++;
      if (line[i] === '}') {
        i++;
        break;
      }
      const k = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(i));
      if (!k || line[i + k[0].length] !== '=' || line[i + k[0].length + 1] !== '"') return null;
      i += k[0].length + 2;
      let v = '';
      for (;;) {
        if (i >= line.length) return null;
        const c = line[i++];
        if (c === '"') break;
        if (c === '\\') {
          const e = line[i++];
          v += e === 'n' ? '\n' : e;
        } else {
          v += c;
        }
      }
      labels[k[0]] = v;
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  if (rest.length < 1 || rest[0] === '') return null;
  const value = parseValue(rest[0]);
  if (Number.isNaN(value) && rest[0] !== 'NaN') return null;
  return { name, labels, value };
}

function parseValue(s) {
  if (s === '+Inf' || s === 'Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  return Number(s);
}

// The sum of every sample of `name` (0 when absent).
export function sumOf(families, name) {
  let total = 0;
  for (const s of families.get(name) ?? []) total += s.value;
  return total;
}

// The cumulative buckets of histogram `name` summed over its label sets (a server serves one
// model, so this is that model's): [{le, count}] sorted by le, +Inf last.
export function histogramBuckets(families, name) {
  const byLe = new Map();
  for (const s of families.get(`${name}_bucket`) ?? []) {
    const le = parseValue(s.labels.le);
    if (Number.isNaN(le)) continue;
    byLe.set(le, (byLe.get(le) ?? 0) + s.value);
  }
  return [...byLe.entries()].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count }));
}

// now - then, bucket by bucket (the observations between two scrapes). A counter reset (the
// server restarted) gives `now` itself.
export function bucketDelta(now, then) {
  if (!then || then.length !== now.length) return now;
  const out = [];
  for (let i = 0; i < now.length; i++) {
    if (now[i].le !== then[i].le || now[i].count < then[i].count) return now;
    out.push({ le: now[i].le, count: now[i].count - then[i].count });
  }
  return out;
}

// PromQL's histogram_quantile(q, buckets): NaN without observations; the rank q * total falls in
// the first bucket whose cumulative count reaches it, and the result is interpolated linearly
// between that bucket's lower bound (the previous le, 0 for the first) and its le. A rank in the
// +Inf bucket answers the largest finite le.
export function histogramQuantile(q, buckets) {
  if (!buckets.length || !(q >= 0 && q <= 1)) return NaN;
  const total = buckets[buckets.length - 1].count;
  if (!(total > 0)) return NaN;
  const rank = q * total;
  let i = 0;
  while (i < buckets.length - 1 && buckets[i].count < rank) i++;
  const b = buckets[i];
  if (b.le === Infinity) return buckets.length > 1 ? buckets[buckets.length - 2].le : NaN;
  const lower = i === 0 ? 0 : buckets[i - 1].le;
  const below = i === 0 ? 0 : buckets[i - 1].count;
  const inBucket = b.count - below;
  if (inBucket <= 0) return b.le;
  if (i === 0 && b.le <= 0) return b.le;
  return lower + (b.le - lower) * ((rank - below) / inBucket);
}
