// Faults against a real `pagoda serve` on the bundled model: a client that disconnects in any
// phase (queued, prefill, streaming, non-streaming) frees its KV blocks (vllm:kv_cache_usage_perc
// back to 0); SIGTERM lets a running request finish and exits 0, a second SIGTERM exits at once;
// queue-full 429s are counted the same by clients and /metrics; `promtool check metrics` accepts
// /metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { startServer, skipReason, metrics, metric, waitMetric, sleep } from './harness.mjs';

const skip = skipReason();
const LONG = { prompt: 'Once upon a time', max_tokens: 480, ignore_eos: true, temperature: 0 };

function postJson(url, path, body, signal) {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

// A raw request whose socket the test can destroy at any moment.
function rawPost(port, path, body) {
  const sock = net.connect(port, '127.0.0.1');
  const b = Buffer.from(JSON.stringify(body));
  sock.on('error', () => {});
  sock.on('connect', () =>
    sock.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\n\r\n${b}`));
  let data = '';
  sock.on('data', (d) => { data += d.toString(); });
  return { sock, received: () => data };
}

async function freedWithin(url, label) {
  const t0 = performance.now();
  const v = await waitMetric(url, 'vllm:kv_cache_usage_perc', (x) => x === 0, 5000);
  const running = await waitMetric(url, 'vllm:num_requests_running', (x) => x === 0, 5000);
  const ms = performance.now() - t0;
  console.log(`${label}: KV usage back to 0 in ${ms.toFixed(0)} ms`);
  assert.equal(v, 0, `${label}: kv usage`);
  assert.equal(running, 0, `${label}: running`);
  return ms;
}

test('a client that disconnects in any phase frees its blocks', { skip }, async () => {
  const s = await startServer(['--max-num-seqs', '1', '--max-num-batched-tokens', '16', '--threads', '1']);
  try {
    // Streaming: after the first chunk.
    {
      const ac = new AbortController();
      const r = await postJson(s.url, '/v1/completions', { ...LONG, stream: true }, ac.signal);
      const reader = r.body.getReader();
      await reader.read();
      assert.ok((await waitMetric(s.url, 'vllm:kv_cache_usage_perc', (x) => x > 0)) > 0);
      ac.abort();
      await freedWithin(s.url, 'streaming');
    }
    // Non-streaming: while it generates (nothing written to the client yet).
    {
      const c = rawPost(s.port, '/v1/completions', LONG);
      assert.equal(await waitMetric(s.url, 'vllm:num_requests_running', (x) => x === 1), 1);
      c.sock.destroy();
      await freedWithin(s.url, 'non-streaming');
      assert.equal(c.received(), '');
    }
    // Queued: behind a running request (max-num-seqs 1), then the running one.
    {
      const running = rawPost(s.port, '/v1/completions', { ...LONG, stream: true });
      assert.equal(await waitMetric(s.url, 'vllm:num_requests_running', (x) => x === 1), 1);
      const queued = rawPost(s.port, '/v1/completions', LONG);
      assert.equal(await waitMetric(s.url, 'vllm:num_requests_waiting', (x) => x === 1), 1);
      queued.sock.destroy();
      assert.equal(await waitMetric(s.url, 'vllm:num_requests_waiting', (x) => x === 0), 0);
      running.sock.destroy();
      await freedWithin(s.url, 'queued + running');
    }
    // Prefill: a long prompt computed 16 tokens per step; gone before its first token.
    {
      const prompt = Array.from({ length: 400 }, (_, i) => 10 + (i % 200));
      const c = rawPost(s.port, '/v1/completions', { prompt, max_tokens: 8, stream: true });
      await waitMetric(s.url, 'vllm:num_requests_running', (x) => x === 1, 5000);
      c.sock.destroy();
      await freedWithin(s.url, 'prefill');
    }
    const m = await metrics(s.url);
    assert.ok(metric(m, 'pagoda:requests_aborted_total', { cause: 'client_disconnect' }) >= 4);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test('SIGTERM drains: the running request completes, then exit 0', { skip }, async () => {
  const s = await startServer(['--drain-timeout', '60', '--threads', '1']);
  const r = await postJson(s.url, '/v1/completions', { ...LONG, max_tokens: 200, stream: true });
  const reader = r.body.getReader();
  let text = '';
  const dec = new TextDecoder();
  const first = await reader.read();
  text += dec.decode(first.value);
  s.proc.kill('SIGTERM');
  await sleep(50);
  // New connections are refused or answered 503 while draining.
  try {
    const h = await fetch(`${s.url}/health`);
    assert.equal(h.status, 503);
  } catch {}
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value);
  }
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  assert.equal(events.at(-1), '[DONE]');
  const last = JSON.parse(events.at(-2));
  assert.equal(last.choices[0].finish_reason, 'length');
  const { code } = await s.exited;
  assert.equal(code, 0, s.log());
});

test('a second SIGTERM exits at once', { skip }, async () => {
  const s = await startServer(['--drain-timeout', '600', '--threads', '1']);
  const c = rawPost(s.port, '/v1/completions', { ...LONG, stream: true });
  await waitMetric(s.url, 'vllm:num_requests_running', (x) => x === 1);
  s.proc.kill('SIGTERM');
  await sleep(100);
  const t0 = performance.now();
  s.proc.kill('SIGTERM');
  const { code } = await s.exited;
  console.log(`second SIGTERM: exited ${code} after ${(performance.now() - t0).toFixed(0)} ms`);
  assert.notEqual(code, null);
  c.sock.destroy();
});

test('queue-full 429s are counted the same by clients and /metrics', { skip }, async () => {
  const s = await startServer(['--max-num-seqs', '1', '--max-queue', '2', '--threads', '1']);
  try {
    const before = metric(await metrics(s.url), 'pagoda:requests_rejected_total', { reason: 'queue_full' });
    assert.equal(before, 0);
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        postJson(s.url, '/v1/completions', { ...LONG, max_tokens: 60 }).then(async (r) => ({
          status: r.status,
          retry: r.headers.get('retry-after'),
          body: await r.json(),
        }))),
    );
    const limited = results.filter((r) => r.status === 429);
    assert.equal(results.filter((r) => r.status === 200).length + limited.length, 12);
    assert.ok(limited.length >= 1, 'some requests must be refused');
    for (const r of limited) {
      assert.equal(r.retry, '1');
      assert.equal(r.body.error.code, 'queue_full');
    }
    const m = await metrics(s.url);
    assert.equal(metric(m, 'pagoda:requests_rejected_total', { reason: 'queue_full' }), limited.length);
    assert.equal(metric(m, 'pagoda:http_requests_total', { code: '429' }), limited.length);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test('promtool check metrics passes on /metrics', { skip }, async () => {
  const which = spawnSync('sh', ['-c', 'command -v promtool']);
  if (which.status !== 0) {
    console.log('promtool not installed (Debian package prometheus): skipped');
    return;
  }
  const s = await startServer();
  try {
    // Some traffic so that histograms and labelled counters have samples.
    await postJson(s.url, '/v1/completions', { prompt: 'Hi', max_tokens: 4 }).then((r) => r.json());
    await postJson(s.url, '/v1/completions', { prompt: '' }).then((r) => r.json());
    const text = await (await fetch(`${s.url}/metrics`)).text();
    for (const name of [
      'vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc',
      'vllm:prompt_tokens_total', 'vllm:generation_tokens_total', 'vllm:request_success_total',
      'vllm:num_preemptions_total', 'vllm:prefix_cache_queries_total', 'vllm:prefix_cache_hits_total',
      'vllm:time_to_first_token_seconds_bucket', 'vllm:inter_token_latency_seconds_bucket',
      'vllm:e2e_request_latency_seconds_bucket', 'vllm:request_queue_time_seconds_bucket',
    ]) {
      assert.ok(text.includes(`${name}{`), `missing ${name}`);
    }
    assert.ok(text.includes('model_name="'));
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text });
    const out = `${check.stdout}${check.stderr}`;
    // Exit 1 is a format error; exit 3 lists lint problems. vLLM's metric names carry a
    // `vllm:` prefix (dashboards depend on it), which promtool's linter flags as a recording-
    // rule style name; every other lint problem fails the test.
    const problems = out.split('\n').filter((l) => l.trim() !== '');
    const otherProblems = problems.filter((l) => !/^(vllm|pagoda):\w+ metric names should not contain ':'$/.test(l));
    assert.ok(check.status === 0 || (check.status === 3 && otherProblems.length === 0),
      `promtool exit ${check.status}: ${out}`);
    assert.deepEqual(otherProblems, []);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});
