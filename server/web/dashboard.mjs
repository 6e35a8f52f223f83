// The live dashboard: polls /metrics once a second, keeps the last five minutes of samples and
// plots, from vLLM's metric names: generated and prompt tokens/s (counter deltas), TTFT and
// time-per-output-token p50/p90/p99 (histogram bucket deltas over the last 30 s, quantiles as
// PromQL computes them), running and waiting requests, KV-cache usage and the prefix-cache hit
// rate (hits/queries over the last 10 s).
import { parsePrometheus, sumOf, histogramBuckets, bucketDelta, histogramQuantile } from './prometheus.mjs';
import { drawPlot } from './plot.mjs';
import { api } from './api.mjs';

const WINDOW_MS = 5 * 60 * 1000;
const QUANTILE_WINDOW_MS = 30 * 1000;
const HIT_RATE_WINDOW_MS = 10 * 1000;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

// One scrape reduced to what the plots need.
export function snapshot(text, t) {
  const f = parsePrometheus(text);
  return {
    t,
    generation: sumOf(f, 'vllm:generation_tokens_total'),
    prompt: sumOf(f, 'vllm:prompt_tokens_total'),
    running: sumOf(f, 'vllm:num_requests_running'),
    waiting: sumOf(f, 'vllm:num_requests_waiting'),
    kv: sumOf(f, 'vllm:kv_cache_usage_perc'),
    hits: sumOf(f, 'vllm:prefix_cache_hits_total'),
    queries: sumOf(f, 'vllm:prefix_cache_queries_total'),
    ttft: histogramBuckets(f, 'vllm:time_to_first_token_seconds'),
    tpot: histogramBuckets(f, 'vllm:inter_token_latency_seconds'),
  };
}

// The latest snapshot at least `ms` older than `s` (or the oldest there is).
function before(samples, s, ms) {
  let found = samples[0];
  for (const x of samples) {
    if (x.t <= s.t - ms) found = x;
    else break;
  }
  return found;
}

// The plotted values of the newest snapshot, given the history (which includes it).
export function derive(samples) {
  const s = samples[samples.length - 1];
  const prev = samples.length > 1 ? samples[samples.length - 2] : null;
  const dt = prev ? (s.t - prev.t) / 1000 : 0;
  const rate = (a, b) => (prev && dt > 0 && a >= b ? (a - b) / dt : NaN);
  const q = before(samples, s, QUANTILE_WINDOW_MS);
  const ttft = bucketDelta(s.ttft, q === s ? null : q.ttft);
  const tpot = bucketDelta(s.tpot, q === s ? null : q.tpot);
  const h = before(samples, s, HIT_RATE_WINDOW_MS);
  const dq = s.queries - h.queries;
  return {
    generationPerSec: rate(s.generation, prev?.generation),
    promptPerSec: rate(s.prompt, prev?.prompt),
    ttft: [0.5, 0.9, 0.99].map((p) => histogramQuantile(p, ttft)),
    tpot: [0.5, 0.9, 0.99].map((p) => histogramQuantile(p, tpot)),
    running: s.running,
    waiting: s.waiting,
    kvPercent: 100 * s.kv,
    prefixHitPercent: dq > 0 && h !== s ? (100 * (s.hits - h.hits)) / dq : NaN,
  };
}

export class Dashboard {
  constructor(doc, intervalMs = 1000) {
    this.doc = doc;
    this.intervalMs = intervalMs;
    this.samples = [];
    this.points = []; // [{t, ...derive()}]
    this.numScrapes = 0;
    this.error = '';
    this.timer = null;
  }

  start() {
    if (this.timer) return;
    const tick = async () => {
      await this.poll();
      this.timer = setTimeout(tick, this.intervalMs);
    };
    this.timer = setTimeout(tick, 0);
  }

  async poll() {
    try {
      const r = await api('metrics');
      if (!r.ok) {
        this.error = `/metrics answered ${r.status}`;
        return;
      }
      const s = snapshot(await r.text(), Date.now());
      this.samples.push(s);
      while (this.samples.length > 2 && this.samples[0].t < s.t - WINDOW_MS - QUANTILE_WINDOW_MS) {
        this.samples.shift();
      }
      this.points.push({ t: s.t, ...derive(this.samples) });
      while (this.points.length && this.points[0].t < s.t - WINDOW_MS) this.points.shift();
      this.numScrapes++;
      this.error = '';
      this.draw();
    } catch (e) {
      this.error = `/metrics: ${e.message}`;
    }
  }

  series(label, color, pick) {
    return { label, color, points: this.points.map((p) => [p.t, pick(p)]) };
  }

  draw() {
    const view = this.doc.getElementById('dashboard-view');
    if (!view || view.hidden) return;
    const now = Date.now();
    const opts = { now, windowMs: WINDOW_MS };
    const plot = (id, series, extra = {}) =>
      drawPlot(this.doc.getElementById(id), series, { ...opts, ...extra });
    plot('plot-tokens', [
      this.series('generated', COLORS[0], (p) => p.generationPerSec),
      this.series('prompt', COLORS[1], (p) => p.promptPerSec),
    ]);
    const pct = (key) => ['p50', 'p90', 'p99'].map((l, i) => this.series(l, COLORS[i], (p) => p[key][i]));
    plot('plot-ttft', pct('ttft'));
    plot('plot-tpot', pct('tpot'));
    plot('plot-requests', [
      this.series('running', COLORS[0], (p) => p.running),
      this.series('waiting', COLORS[1], (p) => p.waiting),
    ]);
    // KV usage: the axis grows with the usage (up to 100 %), so a light load stays visible.
    plot('plot-kv', [this.series('used', COLORS[2], (p) => p.kvPercent)], { yCap: 100 });
    plot('plot-prefix', [this.series('hits', COLORS[3], (p) => p.prefixHitPercent)], { yMax: 100 });
  }
}
