// The router's degradation ladder end to end, against a stub backend whose requests the test
// holds open (so the router's queue length is exactly the number held) and whose scraped
// vllm:num_requests_waiting it sets:
// - a load ramp climbs 0 -> 5 one level per threshold; after the load is released the level
//   comes back down one step per cooldown to 0 and stays there (the level sequence sampled from
//   /metrics is monotone up, then monotone down: no oscillation), with each step >= the cooldown;
// - each level's action as a client sees it (x-pagoda-degradation header on every response):
//   token-bucket 429s only from level 1, max_tokens clamped from 2, the smaller model from 3,
//   n refused by name and cached answers (counted in the metrics) from 4, the preset reply at 5;
// - the replicas' scraped waiting count is a trigger of its own, and so are p95 TTFT and the
//   error rate over the sliding window (another router: slow or failed answers raise the level,
//   it comes down once the window forgets them);
// - level 1's queue (a second router): max_concurrent proxied, the rest wait by tier, a full
//   queue sheds the lowest tier (503 queue_full), a waiter times out (429 queue_timeout).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { BIN, metrics, metric, sleep, startRouter, waitHealthy, waitMetric } from './harness.mjs';

const skip = BIN ? false : 'PAGODA_BIN is not set (run through ctest)';
const COOLDOWN_MS = 600;
let router;
let stub;
let stubWaiting = 0;
let stubHits = 0;
let held = [];

function startStub() {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
      return;
    }
    if (req.method === 'GET' && req.url === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name="demo"} ${stubWaiting}\n`);
      return;
    }
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const parsed = JSON.parse(body);
      const answer = () => {
        stubHits++;
        const text = JSON.stringify({ model: parsed.model, max_tokens: parsed.max_tokens ?? null, hit: stubHits });
        const out = JSON.stringify({
          id: `chatcmpl-${stubHits}`, object: 'chat.completion', created: 1, model: parsed.model,
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: text } }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
        res.end(out);
      };
      const content = parsed.messages?.[0]?.content;
      if (content === 'hold') held.push(answer);
      else if (content === 'slow') setTimeout(answer, 250);
      else if (content === 'fail') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"stub failure","type":"server_error"}}');
      }
      else answer();
    });
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
}

async function level() {
  return metric(await metrics(router.url), 'pagoda_router_degradation_level');
}

async function waitLevel(want, timeoutMs = 5000) {
  const l = await waitMetric(router.url, 'pagoda_router_degradation_level', (v) => v === want,
                             timeoutMs);
  if (l !== want) throw new Error(`level ${l}, expected ${want}`);
}

function chat(content, extra = {}, key = 'sk-default') {
  return fetch(`${router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content }], ...extra }),
  });
}

// Holds `n` more requests open at the stub; returns their response promises.
async function hold(n) {
  const before = held.length;
  const pending = [];
  for (let i = 0; i < n; ++i) pending.push(chat('hold'));
  const deadline = Date.now() + 5000;
  while (held.length < before + n) {
    if (Date.now() > deadline) throw new Error(`only ${held.length - before} of ${n} held`);
    await sleep(10);
  }
  return pending;
}

async function releaseAll(pending) {
  const h = held;
  held = [];
  for (const answer of h) answer();
  for (const r of await Promise.all(pending)) {
    assert.equal(r.status, 200);
    await r.text();
  }
}

before(async () => {
  if (skip) return;
  stub = await startStub();
  const url = `http://127.0.0.1:${stub.address().port}`;
  router = await startRouter(`listen: {host: 127.0.0.1, port: 0}
backends:
  - {name: stub, url: "${url}", models: [demo, demo-small]}
health: {interval_ms: 50, timeout_ms: 500, max_backoff_ms: 400}
ladder:
  eval_interval_ms: 20
  min_samples: 100000
  cooldown_ms: ${COOLDOWN_MS}
  clear_ratio: 0.5
  levels:
    - {queue_length: 4, backend_waiting: 10}
    - {queue_length: 8}
    - {queue_length: 12}
    - {queue_length: 16}
    - {queue_length: 24}
  rate_limits:
    default: {requests_per_minute: 100000}
    keys: {sk-limited: {requests_per_minute: 3}}
  queue: {max_concurrent: 100, max_queued: 10, timeout_ms: 5000}
  max_tokens_cap: 8
  route: {demo: demo-small}
  disable: [n, logprobs]
  cache: {max_entries: 100, ttl_ms: 60000}
  circuit: {retry_after_s: 7, preset_reply: "busy, try later"}
`);
  await waitHealthy(router.url, 10000);
});

after(async () => {
  if (router) {
    router.proc.kill('SIGTERM');
    await new Promise((r) => router.proc.on('exit', r));
  }
  for (const answer of held) answer();
  stub?.close();
});

test('a load ramp climbs the ladder and returns to 0 after the cooldowns without oscillating', { skip }, async () => {
  await waitLevel(0);
  // Sample the level every 20 ms for the whole test.
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.push({ at: Date.now(), level: await level() });
      await sleep(20);
    }
  })();
  const pending = [];
  for (const [n, want] of [[2, 0], [2, 1], [4, 2], [4, 3], [4, 4], [8, 5]]) {
    pending.push(...(await hold(n)));
    await waitLevel(want);
    const r = await chat('probe');  // every response says the level
    assert.equal(r.headers.get('x-pagoda-degradation'), String(want));
    await r.text();
  }
  await sleep(300);  // hold at 5
  await releaseAll(pending);
  await waitLevel(0, 5 * COOLDOWN_MS + 3000);
  await sleep(2 * COOLDOWN_MS);  // and it stays at 0
  sampling = false;
  await sampler;

  // Distinct consecutive levels: straight up, straight down. Each level on the way up was
  // awaited above (the sampler, slower than the climb on a loaded machine, may miss a level held
  // for only a probe's time); the descent takes a cooldown per level, so the sampler sees each.
  // The change counters below prove there was no other change (no oscillation).
  const steps = samples.filter((s, i) => i === 0 || s.level !== samples[i - 1].level);
  const top = steps.findIndex((s) => s.level === 5);
  assert.ok(top > 0, `never reached 5: ${steps.map((s) => s.level)}`);
  const up = steps.slice(0, top + 1).map((s) => s.level);
  assert.ok(up.every((l, i) => i === 0 || l > up[i - 1]), `not monotone up: ${up}`);
  const down = steps.slice(top);
  assert.deepEqual(down.map((s) => s.level), [5, 4, 3, 2, 1, 0]);
  // One step down per cooldown. Observed times lag the real ones by up to a sampling round trip
  // (more on a loaded machine), so single steps get a generous margin and the whole descent
  // 4 -> 0 (four cooldowns, lag only at its two ends) a tight one.
  for (let i = 1; i < down.length; ++i) {
    assert.ok(down[i].at - down[i - 1].at >= COOLDOWN_MS / 2,
              `step ${down[i - 1].level} -> ${down[i].level} after ${down[i].at - down[i - 1].at} ms`);
  }
  const descent = down[5].at - down[1].at;
  assert.ok(descent >= 4 * COOLDOWN_MS - 100, `4 -> 0 took ${descent} ms`);
  const m = await metrics(router.url);
  assert.equal(metric(m, 'pagoda_router_degradation_changes_total', { direction: 'up' }), 5);
  assert.equal(metric(m, 'pagoda_router_degradation_changes_total', { direction: 'down' }), 5);
});

test('each level acts: 429 buckets, clamp, smaller model, refused n, cache hits, preset reply', { skip }, async () => {
  await waitLevel(0);
  // Level 0: no rate limits, no rewrites. A temperature-0 answer is stored as it passes.
  for (let i = 0; i < 5; ++i) {
    const r = await chat('hi', {}, 'sk-limited');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-pagoda-degradation'), '0');
    await r.text();
  }
  const first = await chat('what is 2+2?', { temperature: 0, max_tokens: 50 });
  const firstBody = await first.text();
  assert.deepEqual(JSON.parse(JSON.parse(firstBody).choices[0].message.content).model, 'demo');
  const stores = metric(await metrics(router.url), 'pagoda_router_cache_stores_total');
  assert.ok(stores >= 1, `stores ${stores}`);

  // Level 1: sk-limited has 3 requests per minute, then 429 + Retry-After + OpenAI error body.
  const pending = await hold(4);
  await waitLevel(1);
  for (let i = 0; i < 3; ++i) {
    const r = await chat('hi', {}, 'sk-limited');
    assert.equal(r.status, 200, `request ${i}`);
    await r.text();
  }
  const limited = await chat('hi', {}, 'sk-limited');
  assert.equal(limited.status, 429);
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  assert.equal(limited.headers.get('x-pagoda-degradation'), '1');
  const err = (await limited.json()).error;
  assert.equal(err.code, 'rate_limit_exceeded');
  assert.equal(err.type, 'rate_limit_error');
  assert.match(err.message, /3 requests per minute/);
  // Other keys are not affected.
  assert.equal((await chat('hi', {}, 'sk-other')).status, 200);

  // Level 2: max_tokens clamped to 8. Level 3: demo goes to demo-small.
  pending.push(...(await hold(4)));
  await waitLevel(2);
  let seen = JSON.parse((await (await chat('x', { max_tokens: 100 })).json()).choices[0].message.content);
  assert.deepEqual([seen.model, seen.max_tokens], ['demo', 8]);
  pending.push(...(await hold(4)));
  await waitLevel(3);
  seen = JSON.parse((await (await chat('x', { max_tokens: 5 })).json()).choices[0].message.content);
  assert.deepEqual([seen.model, seen.max_tokens], ['demo-small', 5]);

  // Level 4: n > 1 refused by name (503), the cached answer served without the backend.
  pending.push(...(await hold(4)));
  await waitLevel(4);
  const refused = await chat('x', { n: 2 });
  assert.equal(refused.status, 503);
  const refusedErr = (await refused.json()).error;
  assert.equal(refusedErr.param, 'n');
  assert.equal(refusedErr.code, 'feature_disabled');
  const hitsBefore = stubHits;
  const cached = await chat('what is 2+2?', { temperature: 0, max_tokens: 50 });
  assert.equal(cached.status, 200);
  assert.equal(cached.headers.get('x-pagoda-cache'), 'hit');
  assert.equal(cached.headers.get('x-pagoda-degradation'), '4');
  assert.equal(await cached.text(), firstBody);
  assert.equal(stubHits, hitsBefore);
  // Another key or another temperature is not the same request.
  const otherKey = await chat('what is 2+2?', { temperature: 0, max_tokens: 50 }, 'sk-other');
  assert.equal(otherKey.headers.get('x-pagoda-cache'), null);
  await otherKey.text();
  let m = await metrics(router.url);
  assert.equal(metric(m, 'pagoda_router_cache_lookups_total', { result: 'hit' }), 1);
  assert.equal(metric(m, 'pagoda_router_ladder_actions_total', { action: 'cache_hit' }), 1);

  // Level 5: the preset reply (streamed too), as the endpoint's own shape.
  pending.push(...(await hold(8)));
  await waitLevel(5);
  const preset = await chat('x');
  assert.equal(preset.status, 200);
  assert.equal(preset.headers.get('x-pagoda-backend'), 'preset');
  assert.equal((await preset.json()).choices[0].message.content, 'busy, try later');
  const streamed = await (await chat('x', { stream: true })).text();
  assert.match(streamed, /"content":"busy, try later"/);
  assert.ok(streamed.endsWith('data: [DONE]\n\n'));
  m = await metrics(router.url);
  assert.equal(metric(m, 'pagoda_router_errors_total', { cause: 'rate_limited' }), 1);
  assert.equal(metric(m, 'pagoda_router_errors_total', { cause: 'feature_disabled' }), 1);
  assert.ok(metric(m, 'pagoda_router_ladder_actions_total', { action: 'preset_reply' }) >= 2);
  await releaseAll(pending);
  await waitLevel(0, 5 * COOLDOWN_MS + 3000);
});

test('the replicas\' scraped waiting count is a trigger', { skip }, async () => {
  await waitLevel(0);
  stubWaiting = 12;
  await waitLevel(1);
  stubWaiting = 0;
  await waitLevel(0, COOLDOWN_MS + 3000);
});

test('the level-1 queue admits by tier, sheds the lowest tier and times out', { skip }, async () => {
  const url = `http://127.0.0.1:${stub.address().port}`;
  const r2 = await startRouter(`listen: {host: 127.0.0.1, port: 0}
backends:
  - {name: stub, url: "${url}", models: [demo]}
health: {interval_ms: 50}
ladder:
  eval_interval_ms: 10
  cooldown_ms: 60000
  levels: [{queue_length: 1}]
  rate_limits:
    keys: {sk-gold: {tier: 2}}
  queue: {max_concurrent: 2, max_queued: 1, timeout_ms: 400}
`);
  try {
    await waitHealthy(r2.url, 10000);
    const post = (content, key) => fetch(`${r2.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content }] }),
    });
    // Two held requests: the cap is reached and the ladder is at level 1.
    const before = held.length;
    const running = [post('hold', 'sk-a'), post('hold', 'sk-a')];
    while (held.length < before + 2) await sleep(10);
    const deadline = Date.now() + 3000;
    while (metric(await metrics(r2.url), 'pagoda_router_degradation_level') !== 1) {
      assert.ok(Date.now() < deadline, 'level 1 not reached');
      await sleep(10);
    }
    // A tier-0 request waits; a second tier-0 finds the queue full and is shed.
    const low = post('x', 'sk-a');
    await sleep(50);
    assert.equal(metric(await metrics(r2.url), 'pagoda_router_queue_requests', { state: 'waiting' }), 1);
    const shed = await post('x', 'sk-b');
    assert.equal(shed.status, 503);
    assert.equal((await shed.json()).error.code, 'queue_full');
    // A tier-2 request takes the tier-0 waiter's place (that one is shed), then times out.
    const gold = post('x', 'sk-gold');
    const lowRes = await low;
    assert.equal(lowRes.status, 503);
    assert.equal((await lowRes.json()).error.code, 'queue_full');
    const goldRes = await gold;
    assert.equal(goldRes.status, 429);
    assert.equal((await goldRes.json()).error.code, 'queue_timeout');
    // A waiter is admitted as soon as a running request finishes.
    const next = post('x', 'sk-gold');
    await sleep(50);
    held.shift()();
    assert.equal((await next).status, 200);
    for (const answer of held.splice(0)) answer();
    for (const r of await Promise.all(running)) assert.equal(r.status, 200);
    const m = await metrics(r2.url);
    assert.equal(metric(m, 'pagoda_router_errors_total', { cause: 'queue_shed' }), 2);
    assert.equal(metric(m, 'pagoda_router_errors_total', { cause: 'queue_timeout' }), 1);
  } finally {
    r2.proc.kill('SIGTERM');
    await new Promise((r) => r2.proc.on('exit', r));
  }
});

test('p95 TTFT and the error rate over the sliding window are triggers', { skip }, async () => {
  const url = `http://127.0.0.1:${stub.address().port}`;
  const r3 = await startRouter(`listen: {host: 127.0.0.1, port: 0}
backends:
  - {name: stub, url: "${url}", models: [demo]}
health: {interval_ms: 50, failures_to_eject: 1000}
limits: {max_attempts: 1}
ladder:
  eval_interval_ms: 10
  window_ms: 1000
  min_samples: 4
  cooldown_ms: 200
  levels: [{p95_ttft_ms: 200}, {error_rate: 0.5}]
`);
  try {
    await waitHealthy(r3.url, 10000);
    const post = (content) => fetch(`${r3.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content }] }),
    }).then((r) => r.text());
    const lvl = async () => metric(await metrics(r3.url), 'pagoda_router_degradation_level');
    // Three slow answers are below min_samples: no p95 yet, level 0.
    for (let i = 0; i < 3; ++i) await post('slow');
    await sleep(50);
    assert.equal(await lvl(), 0);
    await post('slow');  // the fourth: p95 TTFT >= 250 ms >= 200
    let deadline = Date.now() + 2000;
    while (await lvl() !== 1) {
      assert.ok(Date.now() < deadline, 'level 1 not reached');
      await sleep(10);
    }
    // Fast answers only: once the slow ones leave the 1 s window, p95 falls and, after the
    // 200 ms cooldown, the level with it.
    deadline = Date.now() + 4000;
    while (await lvl() !== 0) {
      assert.ok(Date.now() < deadline, 'level 0 not reached');
      await post('fast');
      await sleep(20);
    }
    // Failed requests (the replica's 5xx, every attempt failed: 502 to the client) are errors:
    // Once the window has forgotten the fast answers, 4 of 4 is over level 2's 0.5.
    await sleep(1100);
    for (let i = 0; i < 4; ++i) await post('fail');
    deadline = Date.now() + 2000;
    while (await lvl() !== 2) {
      assert.ok(Date.now() < deadline, 'level 2 not reached');
      await sleep(10);
    }
    deadline = Date.now() + 4000;
    while (await lvl() !== 0) {
      assert.ok(Date.now() < deadline, 'level 0 not reached after the errors');
      await sleep(20);
    }
  } finally {
    r3.proc.kill('SIGTERM');
    await new Promise((r) => r3.proc.on('exit', r));
  }
});

// The router's own errors on /v1/messages are Anthropic-shaped ({"type": "error", "error": {type,
// message}}), as `pagoda serve` answers there; the same refusals on /v1/chat/completions stay
// OpenAI-shaped. Covered: 400 (body), 404 (model), 405, 502 (every attempt failed), 503 (no
// healthy replica), 429 (token bucket) and 503 (circuit breaker, no preset reply).
test('the router answers /v1/messages with Anthropic-shaped errors', { skip }, async () => {
  const url = `http://127.0.0.1:${stub.address().port}`;
  // A port nothing listens on: bind one, close it.
  const dead = await new Promise((r) => {
    const s = http.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = s.address().port;
      s.close(() => r(port));
    });
  });
  const r4 = await startRouter(`listen: {host: 127.0.0.1, port: 0}
backends:
  - {name: stub, url: "${url}", models: [demo]}
  - {name: dead, url: "http://127.0.0.1:${dead}", models: [lonely]}
health: {interval_ms: 60000, timeout_ms: 200, failures_to_eject: 2, max_backoff_ms: 60000}
limits: {max_attempts: 1, connect_timeout_ms: 500}
ladder:
  eval_interval_ms: 10
  cooldown_ms: 60000
  levels: [{queue_length: 1}, {queue_length: 2}, {queue_length: 3}, {queue_length: 4}, {queue_length: 5}]
  rate_limits:
    keys: {sk-limited: {requests_per_minute: 1}}
  circuit: {retry_after_s: 9}
`);
  const pending = [];
  try {
    await waitHealthy(r4.url, 10000);
    const send = (path, body, { key = 'sk-a', method = 'POST' } = {}) => fetch(`${r4.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: method === 'POST' ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined,
    });
    const message = (model, content = 'x') => ({ model, max_tokens: 4, messages: [{ role: 'user', content }] });
    const anthropic = async (r, status, type) => {
      assert.equal(r.status, status);
      const j = await r.json();
      assert.deepEqual(Object.keys(j).sort(), ['error', 'type']);
      assert.equal(j.type, 'error');
      assert.equal(j.error.type, type);
      assert.equal(typeof j.error.message, 'string');
      return j;
    };
    await anthropic(await send('/v1/messages', 'not json'), 400, 'invalid_request_error');
    await anthropic(await send('/v1/messages', message('no-such-model')), 404, 'not_found_error');
    await anthropic(await send('/v1/messages', null, { method: 'GET' }), 405, 'invalid_request_error');
    await anthropic(await send('/v1/messages/count_tokens', message('no-such-model')), 404, 'not_found_error');
    // The dead replica: failures_to_eject is 2 and the startup probe is one failure (the next
    // probe is a minute away), so the first request fails its one attempt (502) and the replica
    // is ejected by it or by the probe, whichever comes second; then no healthy replica serves
    // the model (503).
    await anthropic(await send('/v1/messages', message('lonely')), 502, 'api_error');
    const deadline = Date.now() + 3000;
    for (;;) {
      const r = await send('/v1/messages', message('lonely'));
      if (r.status === 503) {
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
        await anthropic(r, 503, 'overloaded_error');
        break;
      }
      await r.text();
      assert.ok(Date.now() < deadline, `still ${r.status}`);
    }
    // The OpenAI route keeps OpenAI's shape for the same refusal.
    const openai = await send('/v1/chat/completions', { model: 'no-such-model', messages: [] });
    assert.equal(openai.status, 404);
    assert.equal((await openai.json()).error.param, 'model');
    // Level 1: the token bucket of sk-limited (1 request per minute).
    const hold = (n) => {
      const before = held.length;
      for (let i = 0; i < n; ++i) pending.push(send('/v1/chat/completions', { model: 'demo', messages: [{ role: 'user', content: 'hold' }] }));
      return (async () => {
        while (held.length < before + n) await sleep(10);
      })();
    };
    const waitR4Level = async (want) => {
      const until = Date.now() + 3000;
      while (metric(await metrics(r4.url), 'pagoda_router_degradation_level') !== want) {
        assert.ok(Date.now() < until, `level ${want} not reached`);
        await sleep(10);
      }
    };
    await hold(1);
    await waitR4Level(1);
    const first = await send('/v1/messages', message('demo'), { key: 'sk-limited' });
    assert.equal(first.status, 200);
    await first.text();
    const limited = await send('/v1/messages', message('demo'), { key: 'sk-limited' });
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    await anthropic(limited, 429, 'rate_limit_error');
    // Level 5: the circuit breaker without a preset reply.
    await hold(4);
    await waitR4Level(5);
    const open = await send('/v1/messages', message('demo'));
    assert.equal(open.headers.get('retry-after'), '9');
    const j = await anthropic(open, 503, 'overloaded_error');
    assert.match(j.error.message, /level 5/);
  } finally {
    for (const answer of held.splice(0)) answer();
    await Promise.all(pending.map((p) => p.then((r) => r.text()).catch(() => {})));
    r4.proc.kill('SIGTERM');
    await new Promise((r) => r4.proc.on('exit', r));
  }
});
