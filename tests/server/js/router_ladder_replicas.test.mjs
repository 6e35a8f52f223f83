// The router's degradation ladder end to end against real replicas: 3 `pagoda serve` replicas of
// the bundled model (plus one of the bundled smaller model, demo-draft.gguf, as `demo-small`, the
// level-3 route target) behind `pagoda router`, loaded by closed-loop streaming clients of the
// official `openai` SDK.
//
// The load is what the test controls, never timing: N clients each stream one chat completion
// after another, so the router's queue length (its requests in flight) is N except for the
// instants between one client request and its next, and the replicas (--max-num-seqs 1 each)
// hold N - 3 of them waiting, which the router scrapes. Thresholds sit between the steps of N,
// and the hysteresis band (clear_ratio 0.5) with a cooldown the level must stay clear for makes
// a dip between requests harmless. So the level is decided by N alone:
//   N = 4  -> queue_length 4 >= 3                     -> level 1 (token buckets)
//   N = 8  -> scraped waiting 8 - 3 = 5 >= 4            -> level 2 (max_tokens clamp)
//   N = 13 -> queue_length 13 >= 12                    -> level 3 (demo -> demo-small)
//   N = 19 -> queue_length 19 >= 18                    -> level 4 (n refused, cached answers)
// At each level: the level gauge and the x-pagoda-degradation header agree, and the level's
// action is seen on a real replica's answer. Then the clients stop; the level comes down one step
// per cooldown to 0 and stays there. The level sampled from /metrics over the whole run is
// monotone up, then monotone down: 0,1,2,3,4,3,2,1,0.
//
// Level 5 (circuit breaker) is left out on purpose: under a closed-loop load it answers at once,
// the queue empties, the level descends and the load comes back, so a queue-driven level 5 cycles
// by design (it is meant for error-rate triggers); server_js_router_ladder covers it with a stub.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import OpenAI from 'openai';
import { MODEL, skipReason, startServer, startRouter, waitHealthy, metrics, metric, sleep, waitMetric } from './harness.mjs';

const skip = skipReason();
const COOLDOWN_MS = 1500;
const CLAMP = 16;
const replicas = [];
let small;
let router;

async function level() {
  return metric(await metrics(router.url), 'pagoda_router_degradation_level');
}

// Liveness only (the machine may be slow): how long to wait for a level, never an assertion on
// how long it took.
async function waitLevel(want, timeoutMs = 60000) {
  const l = await waitMetric(router.url, 'pagoda_router_degradation_level', (v) => v === want,
                             timeoutMs);
  if (l !== want) throw new Error(`level ${l}, expected ${want}`);
}

function client(key = 'sk-load') {
  return new OpenAI({ baseURL: `${router.url}/v1`, apiKey: key, maxRetries: 0 });
}

// Closed-loop streaming clients: each streams one completion after another until stopped.
class Load {
  constructor() {
    this.loops = [];
    this.stopped = false;
    this.completed = 0;
    this.failures = [];
    this.headerLevels = new Set();
  }

  add(n) {
    for (let i = 0; i < n; ++i) this.loops.push(this.loop(this.loops.length));
  }

  async loop(id) {
    const c = client();
    for (let round = 0; !this.stopped; ++round) {
      try {
        const { data: stream, response } = await c.chat.completions.create({
          model: 'demo',
          messages: [{ role: 'user', content: `Client ${id} round ${round}: tell me a long story.` }],
          max_tokens: 48, ignore_eos: true, stream: true,
        }).withResponse();
        this.headerLevels.add(Number(response.headers.get('x-pagoda-degradation')));
        let finish = null;
        for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
        if (finish !== 'length') this.failures.push(`client ${id}: finish_reason ${finish}`);
        this.completed++;
      } catch (e) {
        this.failures.push(`client ${id}: ${e.status ?? ''} ${e.message}`);
        await sleep(50);
      }
    }
  }

  async stop() {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

// Reads the gauge, sends `probe` (resolving with the router's Response headers and a result), and
// reads the gauge again: all three must say `want` (the load is steady, so the level is too).
async function agree(want, probe) {
  assert.equal(await level(), want);
  const { headers, result } = await probe();
  assert.equal(headers.get('x-pagoda-degradation'), String(want), 'the header and the gauge differ');
  assert.equal(await level(), want);
  return { headers, result };
}

before(async () => {
  if (skip) return;
  const replicaArgs = ['--max-num-seqs', '1', '--no-warmup'];
  for (let i = 0; i < 3; ++i) replicas.push(await startServer(replicaArgs, { threads: 1 }));
  small = await startServer(['--served-model-name', 'demo-small', '--max-num-seqs', '4', '--no-warmup'],
                            { threads: 1, model: path.join(path.dirname(MODEL), 'demo-draft.gguf') });
  const backends = replicas
    .map((s, i) => `  - {name: r${i}, url: "${s.url}", models: [demo]}`)
    .join('\n');
  router = await startRouter(`listen: {host: 127.0.0.1, port: 0}
backends:
${backends}
  - {name: small, url: "${small.url}", models: [demo-small]}
health: {interval_ms: 100, timeout_ms: 2000}
balancing: {prefix_affinity: false}
ladder:
  eval_interval_ms: 25
  cooldown_ms: ${COOLDOWN_MS}
  clear_ratio: 0.5
  levels:
    - {queue_length: 3}
    - {backend_waiting: 4}
    - {queue_length: 12}
    - {queue_length: 18}
  rate_limits:
    keys: {sk-limited: {requests_per_minute: 2}}
  max_tokens_cap: ${CLAMP}
  route: {demo: demo-small}
  disable: [n]
  cache: {max_entries: 100, ttl_ms: 600000}
`);
  await waitHealthy(router.url, 10000);
});

after(async () => {
  if (router) {
    router.proc.kill('SIGTERM');
    await new Promise((r) => router.proc.on('exit', r));
  }
  for (const s of [...replicas, small]) await s?.stop('SIGKILL');
});

test('a load ramp on real replicas climbs 0..4, each level acts, and it comes back to 0 without oscillating', { skip }, async () => {
  await waitLevel(0);
  const m0 = await metrics(router.url);
  const upBefore = metric(m0, 'pagoda_router_degradation_changes_total', { direction: 'up' }) ?? 0;
  const downBefore = metric(m0, 'pagoda_router_degradation_changes_total', { direction: 'down' }) ?? 0;
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.push(await level());
      await sleep(25);
    }
  })();

  // Level 0: a temperature-0 non-streamed answer, stored by the response cache as it passes;
  // no clamp (max_tokens 24 > the clamp gives 24 tokens).
  const cached = { model: 'demo', messages: [{ role: 'user', content: 'What is the sea?' }], temperature: 0, max_tokens: 24, ignore_eos: true };
  const { result: stored } = await agree(0, async () => {
    const { data, response } = await client().chat.completions.create(cached).withResponse();
    return { headers: response.headers, result: data };
  });
  assert.equal(stored.usage.completion_tokens, 24);

  const load = new Load();
  // Level 1: per-key token buckets. sk-limited has 2 requests per minute.
  load.add(4);
  await waitLevel(1);
  const limited = client('sk-limited');
  const tiny = { model: 'demo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 };
  for (let i = 0; i < 2; ++i) {
    await agree(1, async () => {
      const { data, response } = await limited.chat.completions.create(tiny).withResponse();
      assert.equal(data.usage.completion_tokens, 1);
      return { headers: response.headers };
    });
  }
  await agree(1, async () => {
    const e = await limited.chat.completions.create(tiny).then(() => null, (err) => err);
    assert.ok(e, 'the third request of sk-limited within a minute was not refused');
    assert.equal(e.status, 429);
    assert.equal(e.code, 'rate_limit_exceeded');
    assert.ok(Number(e.headers.get('retry-after')) >= 1);
    return { headers: e.headers };
  });

  // Level 2: max_tokens clamped; the replica generates no more than the clamp.
  load.add(4);
  await waitLevel(2);
  await agree(2, async () => {
    const { data, response } = await client().chat.completions.create({
      model: 'demo', messages: [{ role: 'user', content: 'Count to a hundred.' }], max_tokens: 200, ignore_eos: true,
    }).withResponse();
    assert.equal(data.model, 'demo');
    assert.ok(data.usage.completion_tokens <= CLAMP, `completion_tokens ${data.usage.completion_tokens}`);
    assert.equal(data.usage.completion_tokens, CLAMP);  // ignore_eos: exactly the clamp
    assert.equal(data.choices[0].finish_reason, 'length');
    return { headers: response.headers };
  });

  // Level 3: demo goes to the smaller model's replica (still clamped).
  load.add(5);
  await waitLevel(3);
  await agree(3, async () => {
    const { data, response } = await client().chat.completions.create({
      model: 'demo', messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 100, ignore_eos: true,
    }).withResponse();
    assert.equal(data.model, 'demo-small');
    assert.equal(response.headers.get('x-pagoda-backend'), 'small');
    assert.equal(data.usage.completion_tokens, CLAMP);
    return { headers: response.headers };
  });

  // Level 4: n refused by name; the level-0 answer served from the cache, byte for byte the same.
  load.add(6);
  await waitLevel(4);
  await agree(4, async () => {
    const e = await client().chat.completions.create({ ...tiny, n: 2 }).then(() => null, (err) => err);
    assert.equal(e?.status, 503);
    assert.equal(e.param, 'n');
    assert.equal(e.code, 'feature_disabled');
    return { headers: e.headers };
  });
  const hitsBefore = metric(await metrics(router.url), 'pagoda_router_cache_lookups_total', { result: 'hit' }) ?? 0;
  await agree(4, async () => {
    const { data, response } = await client().chat.completions.create(cached).withResponse();
    assert.equal(response.headers.get('x-pagoda-cache'), 'hit');
    assert.deepEqual(data, stored);
    return { headers: response.headers };
  });
  assert.equal(metric(await metrics(router.url), 'pagoda_router_cache_lookups_total', { result: 'hit' }), hitsBefore + 1);

  // The load drops: every client finishes its request and stops.
  await load.stop();
  assert.deepEqual(load.failures, []);
  assert.ok(load.completed >= load.loops.length);
  await waitLevel(0);
  // And it stays at 0 for longer than a cooldown.
  const settled = samples.length;
  await sleep(2 * COOLDOWN_MS);
  sampling = false;
  await sampler;
  assert.ok(samples.slice(settled).every((l) => l === 0), 'the level rose again after the load dropped');

  // Distinct consecutive levels: straight up, straight down.
  const steps = samples.filter((l, i) => i === 0 || l !== samples[i - 1]);
  assert.deepEqual(steps, [0, 1, 2, 3, 4, 3, 2, 1, 0]);
  const m = await metrics(router.url);
  assert.equal(metric(m, 'pagoda_router_degradation_changes_total', { direction: 'up' }) - upBefore, 4);
  assert.equal(metric(m, 'pagoda_router_degradation_changes_total', { direction: 'down' }) - downBefore, 4);
  // The clients saw the levels too (each response's header), never one the ramp did not reach.
  assert.ok([...load.headerLevels].every((l) => l >= 0 && l <= 4), `header levels ${[...load.headerLevels]}`);
  assert.ok(load.headerLevels.has(4));
  // Every request of the run ended well at the router, except the two the ladder refused.
  const notOk = {};
  for (const [k, v] of m) {
    if (!k.startsWith('pagoda_router_requests_total{') || k.includes('outcome="ok"') || v === 0) continue;
    const outcome = k.match(/outcome="([^"]+)"/)[1];
    notOk[outcome] = (notOk[outcome] ?? 0) + v;
  }
  assert.deepEqual(notOk, { error: 2 });
  assert.equal(metric(m, 'pagoda_router_errors_total', { cause: 'rate_limited' }), 1);
  assert.equal(metric(m, 'pagoda_router_errors_total', { cause: 'feature_disabled' }), 1);
});
