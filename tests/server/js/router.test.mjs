// `pagoda router` in front of 3 `pagoda serve` replicas of the bundled model, with the official
// `openai` SDK and raw fetch: streamed and non-streamed requests match a replica's own answer
// (temperature 0), a replica SIGKILLed under load loses no request silently (requests not yet
// started succeed elsewhere, started streams end with finish_reason "error" + an error event +
// [DONE]; the client's counts equal the router's metrics), the restarted replica is readmitted,
// and with every replica down a stub fallback upstream answers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import OpenAI from 'openai';
import { skipReason, startServer, startRouter, waitHealthy, metrics, metric, sleep } from './harness.mjs';

const skip = skipReason();
const replicas = [];
let router;
let fallback;
let fallbackHits = 0;
let configPath;
let configText;

// The sum of pagoda_router_requests_total over backends for one outcome.
async function requestsByOutcome() {
  const m = await metrics(router.url);
  const sums = {};
  for (const [k, v] of m) {
    if (!k.startsWith('pagoda_router_requests_total{')) continue;
    const outcome = k.match(/outcome="([^"]+)"/)[1];
    sums[outcome] = (sums[outcome] ?? 0) + v;
  }
  return sums;
}

async function waitFor(pred, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function backendStatus(name) {
  const h = await (await fetch(`${router.url}/health`)).json();
  return h.backends.find((b) => b.name === name)?.status;
}

// A streamed chat completion read event by event: {backend, events (parsed JSON or '[DONE]')}.
async function streamChat(prompt, maxTokens, onFirstEvent) {
  const r = await fetch(`${router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'gpt-test', messages: [{ role: 'user', content: prompt }], max_tokens: maxTokens,
      temperature: 0, stream: true, ignore_eos: true,
    }),
  });
  const backend = r.headers.get('x-pagoda-backend');
  assert.equal(r.status, 200);
  const events = [];
  let buf = '';
  const decoder = new TextDecoder();
  let notified = false;
  try {
    for await (const chunk of r.body) {
      buf += decoder.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        assert.ok(ev.startsWith('data: '), `not an SSE data event: ${ev}`);
        const data = ev.slice(6);
        events.push(data === '[DONE]' ? data : JSON.parse(data));
        if (!notified) {
          notified = true;
          onFirstEvent?.(backend);
        }
      }
    }
  } catch (e) {
    return { backend, events, transportError: e };
  }
  assert.equal(buf, '', 'the stream ended inside an event');
  return { backend, events };
}

before(async () => {
  if (skip) return;
  for (let i = 0; i < 3; ++i) replicas.push(await startServer([], { threads: 1 }));
  fallback = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      fallbackHits++;
      const parsed = JSON.parse(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: 'chatcmpl-fallback', object: 'chat.completion', created: 1, model: parsed.model,
        choices: [{ index: 0, finish_reason: 'stop',
                    message: { role: 'assistant', content: `fallback saw ${req.url} auth=${req.headers.authorization}` } }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }));
    });
  });
  await new Promise((r) => fallback.listen(0, '127.0.0.1', r));
  const backends = replicas
    .map((s, i) => `  - {name: r${i}, url: "${s.url}", models: [demo]}`)
    .join('\n');
  configText = `listen: {host: 127.0.0.1, port: 0}
backends:
${backends}
aliases: {gpt-test: demo}
fallback: {url: "http://127.0.0.1:${fallback.address().port}/v1", api_key: fb-key, model: remote-model}
health: {interval_ms: 100, timeout_ms: 500, max_backoff_ms: 400, failures_to_eject: 1}
limits: {max_attempts: 3, connect_timeout_ms: 1000}
`;
  router = await startRouter(configText);
  configPath = router.configPath;
  await waitHealthy(router.url, 10000);
});

after(async () => {
  for (const s of replicas) await s?.stop('SIGKILL');
  if (router) {
    router.proc.kill('SIGTERM');
    await new Promise((r) => router.proc.on('exit', r));
  }
  fallback?.close();
});

test('merged /v1/models, /health and refusals', { skip }, async () => {
  const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused' });
  const ids = (await client.models.list()).data.map((m) => m.id).sort();
  assert.deepEqual(ids, ['demo', 'gpt-test']);
  const h = await (await fetch(`${router.url}/health`)).json();
  assert.equal(h.backends_up, 3);
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e.status === 404 && e.param === 'model',
  );
  const bad = await fetch(`${router.url}/v1/chat/completions`, { method: 'POST', body: '{"model": 3}' });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, 'model');
});

test('streamed and non-streamed through the router match a replica answering directly', { skip }, async () => {
  const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
  const params = { messages, max_tokens: 24, temperature: 0 };
  const direct = new OpenAI({ baseURL: `${replicas[0].url}/v1`, apiKey: 'unused' });
  const expected = (await direct.chat.completions.create({ model: 'demo', ...params })).choices[0].message.content;
  assert.ok(expected.length > 0);
  const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused' });
  for (let i = 0; i < 3; ++i) {  // every replica answers one (least outstanding rotates ties)
    const full = await client.chat.completions.create({ model: 'gpt-test', ...params });
    assert.equal(full.choices[0].message.content, expected);
    assert.equal(full.model, 'demo');
    const stream = await client.chat.completions.create({ model: 'gpt-test', ...params, stream: true });
    let text = '';
    let finish = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, expected);
    assert.equal(finish, 'length');
  }
});

test('SIGHUP reloads the config without dropping a running stream; a bad config is kept out', { skip }, async () => {
  let firstEvent;
  const started = new Promise((r) => (firstEvent = r));
  const running = streamChat('A long story:', 300, () => firstEvent());
  await started;
  fs.writeFileSync(configPath, configText.replace('aliases: {gpt-test: demo}', 'aliases: {gpt-test: demo, gpt-new: demo}'));
  router.proc.kill('SIGHUP');
  await waitFor(async () => {
    const ids = (await (await fetch(`${router.url}/v1/models`)).json()).data.map((m) => m.id);
    return ids.includes('gpt-new');
  }, 5000, 'the reloaded alias');
  const r = await running;
  assert.equal(r.events.at(-1), '[DONE]');
  assert.ok(!r.events.some((e) => e !== '[DONE]' && e.error));
  // An invalid file: the running config stays (the new alias still resolves), the log names the key.
  fs.writeFileSync(configPath, configText.replace('models: [demo]', 'modles: [demo]'));
  router.proc.kill('SIGHUP');
  await waitFor(async () => router.log().includes('modles: unknown key'), 5000, 'the reload error');
  const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused' });
  const c = await client.chat.completions.create({ model: 'gpt-new', messages: [{ role: 'user', content: 'x' }], max_tokens: 2 });
  assert.equal(c.model, 'demo');
  fs.writeFileSync(configPath, configText);
  router.proc.kill('SIGHUP');
  await waitFor(async () => {
    const ids = (await (await fetch(`${router.url}/v1/models`)).json()).data.map((m) => m.id);
    return !ids.includes('gpt-new');
  }, 5000, 'the original config');
});

test('SIGKILL under load: no request lost silently, counts match, replica readmitted', { skip }, async () => {
  const before = await requestsByOutcome();
  const N = 9;
  let victim = null;
  let started = 0;
  const startedBy = new Map();
  const onFirst = (backend) => {
    started++;
    startedBy.set(backend, (startedBy.get(backend) ?? 0) + 1);
  };
  const streams = [];
  for (let i = 0; i < N; ++i) streams.push(streamChat(`Story number ${i}:`, 400, onFirst));
  await waitFor(async () => started === N, 20000, 'every stream to start');
  victim = replicas.findIndex((s, i) => startedBy.get(`r${i}`) > 0);
  assert.ok(victim >= 0);
  const victimName = `r${victim}`;
  const victimPort = replicas[victim].port;
  replicas[victim].proc.kill('SIGKILL');
  // Requests sent right after the kill, before any probe noticed: never started, so they must
  // succeed on another replica (retried after the connection error, or routed around it).
  const late = [];
  for (let i = 0; i < 6; ++i) late.push(streamChat(`Late ${i}:`, 8));
  const results = [...(await Promise.all(streams)), ...(await Promise.all(late))];
  let ok = 0;
  let cut = 0;
  for (const [i, r] of results.entries()) {
    assert.equal(r.transportError, undefined, `request ${i} broke without an error event`);
    const last = r.events.at(-1);
    assert.equal(last, '[DONE]', `request ${i} did not end with [DONE]`);
    const errorEvent = r.events.find((e) => e !== '[DONE]' && e.error);
    const finishes = r.events.filter((e) => e !== '[DONE]' && !e.error).map((e) => e.choices[0].finish_reason).filter(Boolean);
    if (errorEvent) {
      assert.equal(r.backend, victimName, 'only the killed replica\'s streams may be cut');
      assert.equal(errorEvent.error.code, 'upstream_stream_cut');
      assert.deepEqual(finishes, ['error']);
      cut++;
    } else {
      assert.notEqual(r.backend, victimName, `request ${i} was answered by the dead replica`);
      assert.deepEqual(finishes, ['length']);
      ok++;
    }
  }
  assert.ok(cut >= 1, 'the killed replica had started streams');
  assert.equal(ok + cut, results.length);
  // The router counts a response after writing its last byte, so a client can see [DONE] a moment
  // before the counter moves: wait until every request is counted, then compare by outcome.
  let afterCounts = {};
  const counted = (c) => Object.entries(c).reduce((s, [k, v]) => s + v - (before[k] ?? 0), 0);
  await waitFor(async () => counted((afterCounts = await requestsByOutcome())) >= results.length, 5000, 'every request counted');
  assert.equal((afterCounts.ok ?? 0) - (before.ok ?? 0), ok);
  assert.equal((afterCounts.stream_cut ?? 0) - (before.stream_cut ?? 0), cut);
  assert.equal((afterCounts.error ?? 0) - (before.error ?? 0), 0);
  await waitFor(async () => (await backendStatus(victimName)) === 'ejected', 5000, 'ejection');

  // Restart on the same port: the health checker readmits it.
  replicas[victim] = await startServer([], { threads: 1, port: victimPort });
  await waitFor(async () => (await backendStatus(victimName)) === 'up', 10000, 'readmission');
  const m = await metrics(router.url);
  assert.ok(metric(m, 'pagoda_router_readmissions_total', { backend: victimName }) >= 1);
  assert.ok(metric(m, 'pagoda_router_ejections_total', { backend: victimName }) >= 1);
});

test('every replica down: the fallback upstream answers', { skip }, async () => {
  for (const [i, s] of replicas.entries()) {
    await s.stop('SIGKILL');
    replicas[i] = null;
  }
  const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused' });
  const hitsBefore = fallbackHits;
  const { data, response } = await client.chat.completions
    .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  assert.equal(response.headers.get('x-pagoda-backend'), 'fallback');
  assert.equal(data.model, 'remote-model');  // fallback.model rewrote the request
  assert.equal(data.choices[0].message.content, 'fallback saw /v1/chat/completions auth=Bearer fb-key');
  assert.equal(fallbackHits, hitsBefore + 1);
  await waitFor(async () => (await (await fetch(`${router.url}/health`)).json()).backends_up === 0, 5000, 'all ejected');
  const m = await metrics(router.url);
  assert.ok(metric(m, 'pagoda_router_requests_total', { backend: 'fallback', outcome: 'ok' }) >= 1);
});
