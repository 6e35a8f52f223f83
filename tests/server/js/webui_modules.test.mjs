// The web page's data code in Node (the same files the server embeds, imported from server/web/):
// the SSE reader against every split of a stream into network chunks, the Prometheus text parser
// against the exposition format's own example, histogram quantiles against PromQL's definition
// and against exact quantiles of known samples, and the dashboard's derived rates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readEvents } from '../../../server/web/sse.mjs';
import { parsePrometheus, sumOf, histogramBuckets, bucketDelta, histogramQuantile } from '../../../server/web/prometheus.mjs';
import { snapshot, derive } from '../../../server/web/dashboard.mjs';
import { niceCeil } from '../../../server/web/plot.mjs';

function streamOf(chunks) {
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
}

async function events(chunks) {
  const out = [];
  for await (const e of readEvents(streamOf(chunks))) out.push(e);
  return out;
}

test('SSE events survive every split into chunks, inside UTF-8 characters and CRLFs', async () => {
  const text =
    ': keep-alive comment\n\n' +
    'data: {"a":"é€😀"}\n\n' +
    'event: x\r\ndata: line1\r\ndata:line2\r\n\r\n' +
    'data: [DONE]\n\n' +
    'data: cut before its blank line';
  const expected = ['{"a":"é€😀"}', 'line1\nline2', '[DONE]'];
  const bytes = new TextEncoder().encode(text);
  assert.deepEqual(await events([bytes]), expected);
  for (let i = 1; i < bytes.length; i++) {
    assert.deepEqual(await events([bytes.slice(0, i), bytes.slice(i)]), expected, `split at ${i}`);
  }
  // One byte at a time.
  assert.deepEqual(await events([...bytes].map((b) => new Uint8Array([b]))), expected);
});

test('the Prometheus text format example parses as documented', () => {
  // From the Prometheus "Exposition formats" documentation (text format example).
  const text = `# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000

# Escaping in label values:
msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9

# Minimalistic line:
metric_without_timestamp_and_labels 12.47

# A weird metric from before the epoch:
something_weird{problem="division by zero"} +Inf -3982045

# A histogram, which has a pretty complex representation in the text format:
# HELP http_request_duration_seconds A histogram of the request duration.
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.05"} 24054
http_request_duration_seconds_bucket{le="0.1"} 33444
http_request_duration_seconds_bucket{le="0.2"} 100392
http_request_duration_seconds_bucket{le="0.5"} 129389
http_request_duration_seconds_bucket{le="1"} 133988
http_request_duration_seconds_bucket{le="+Inf"} 144320
http_request_duration_seconds_sum 53423
http_request_duration_seconds_count 144320
`;
  const f = parsePrometheus(text);
  assert.equal(sumOf(f, 'http_requests_total'), 1030);
  assert.deepEqual(f.get('http_requests_total')[1].labels, { method: 'post', code: '400' });
  assert.deepEqual(f.get('msdos_file_access_time_seconds')[0].labels, {
    path: 'C:\\DIR\\FILE.TXT',
    error: 'Cannot find file:\n"FILE.TXT"',
  });
  assert.equal(sumOf(f, 'msdos_file_access_time_seconds'), 1.458255915e9);
  assert.equal(sumOf(f, 'metric_without_timestamp_and_labels'), 12.47);
  assert.equal(sumOf(f, 'something_weird'), Infinity);
  const b = histogramBuckets(f, 'http_request_duration_seconds');
  assert.deepEqual(b.map((x) => x.le), [0.05, 0.1, 0.2, 0.5, 1, Infinity]);
  assert.equal(b.at(-1).count, sumOf(f, 'http_request_duration_seconds_count'));
  assert.equal(sumOf(f, 'absent'), 0);
});

test('histogram quantiles follow PromQL histogram_quantile', () => {
  const b = [
    { le: 0.1, count: 0 },
    { le: 0.2, count: 50 },
    { le: 0.4, count: 100 },
    { le: Infinity, count: 100 },
  ];
  // rank 50 is the top of (0.1, 0.2]; rank 75 is half way through (0.2, 0.4].
  assert.equal(histogramQuantile(0.5, b), 0.2);
  assert.ok(Math.abs(histogramQuantile(0.75, b) - 0.3) < 1e-12);
  assert.ok(Math.abs(histogramQuantile(0.6, b) - 0.24) < 1e-12);
  // The first bucket interpolates from 0; a rank in +Inf answers the largest finite bound.
  assert.ok(Math.abs(histogramQuantile(0.25, [{ le: 2, count: 4 }, { le: Infinity, count: 4 }]) - 0.5) < 1e-12);
  assert.equal(histogramQuantile(0.99, [{ le: 1, count: 1 }, { le: Infinity, count: 10 }]), 1);
  assert.ok(Number.isNaN(histogramQuantile(0.5, [{ le: 1, count: 0 }, { le: Infinity, count: 0 }])));
  assert.ok(Number.isNaN(histogramQuantile(0.5, [])));
});

test('histogram quantiles approach the exact quantiles of uniform samples', () => {
  // 100,000 samples uniform on [0, 2), bucketed as vLLM's TTFT histogram is (cumulative, +Inf).
  let seed = 12345;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const samples = Array.from({ length: 100000 }, () => 2 * random()).sort((a, b) => a - b);
  const bounds = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, Infinity];
  const buckets = bounds.map((le) => ({ le, count: samples.filter((s) => s <= le).length }));
  for (const q of [0.1, 0.5, 0.9, 0.99]) {
    const exact = samples[Math.ceil(q * samples.length) - 1];
    const est = histogramQuantile(q, buckets);
    // Uniform within each bucket except the last finite one ((1, 2.5] holds samples only to 2).
    const tolerance = exact <= 1 ? 0.01 : 0.75;
    assert.ok(Math.abs(est - exact) < tolerance, `q=${q}: ${est} vs exact ${exact}`);
  }
});

test('bucket deltas are the observations between two scrapes; a reset starts over', () => {
  const then = [{ le: 1, count: 2 }, { le: Infinity, count: 3 }];
  const now = [{ le: 1, count: 5 }, { le: Infinity, count: 9 }];
  assert.deepEqual(bucketDelta(now, then), [{ le: 1, count: 3 }, { le: Infinity, count: 6 }]);
  assert.deepEqual(bucketDelta(then, now), then);
  assert.deepEqual(bucketDelta(now, null), now);
});

test('the dashboard derives rates, hit rates and windowed percentiles from scrapes', () => {
  const scrape = (gen, prompt, hits, queries, ttftFast, ttftAll) => `
vllm:generation_tokens_total{model_name="m"} ${gen}
vllm:prompt_tokens_total{model_name="m"} ${prompt}
vllm:num_requests_running{model_name="m"} 2
vllm:num_requests_waiting{model_name="m"} 1
vllm:kv_cache_usage_perc{model_name="m"} 0.25
vllm:prefix_cache_hits_total{model_name="m"} ${hits}
vllm:prefix_cache_queries_total{model_name="m"} ${queries}
vllm:time_to_first_token_seconds_bucket{model_name="m",le="0.1"} ${ttftFast}
vllm:time_to_first_token_seconds_bucket{model_name="m",le="1"} ${ttftAll}
vllm:time_to_first_token_seconds_bucket{model_name="m",le="+Inf"} ${ttftAll}
`;
  const samples = [snapshot(scrape(100, 50, 0, 0, 0, 0), 0)];
  samples.push(snapshot(scrape(300, 250, 30, 120, 10, 10), 2000));
  let d = derive(samples);
  assert.equal(d.generationPerSec, 100);
  assert.equal(d.promptPerSec, 100);
  assert.equal(d.running, 2);
  assert.equal(d.waiting, 1);
  assert.equal(d.kvPercent, 25);
  assert.equal(d.prefixHitPercent, 25);
  assert.ok(Math.abs(d.ttft[0] - 0.05) < 1e-12); // 10 requests in (0, 0.1]: median 0.05
  // 40 s later, 10 slow requests: the 30 s window holds only them.
  samples.push(snapshot(scrape(300, 250, 30, 120, 10, 20), 42000));
  d = derive(samples);
  assert.equal(d.generationPerSec, 0);
  assert.ok(Math.abs(d.ttft[0] - 0.55) < 1e-12); // median of 10 in (0.1, 1]
  assert.ok(Number.isNaN(d.prefixHitPercent)); // no queries in the last 10 s
});

test('plot axes end on 1, 2 or 5 times a power of ten', () => {
  assert.deepEqual([0.08, 0.3, 1, 3, 7, 101, 0].map(niceCeil), [0.1, 0.5, 1, 5, 10, 200, 1]);
});
