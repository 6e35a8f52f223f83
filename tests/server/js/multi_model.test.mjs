// Several models per server with the official `openai` SDK: the bundled demo model served twice
// under two names (`demo`, `twin`) plus the bundled draft model (`draft`), within
// --max-loaded-models 2 and --idle-unload-seconds. Checks that each name answers from its own
// engine (demo and twin: the same weights, so the same greedy text), that /v1/models reports
// unloaded -> loaded -> unloaded, that loading a third model unloads the least recently used
// one, and, from process_resident_memory_bytes (VmRSS), that an idle unload gives the memory
// back: what stays resident after every model is unloaded again must be under half of the demo
// model's file size (a leak of its weights would exceed it), while loading showed at least the
// weights of the models loaded. A --models-dir test serves a directory with a corrupt .gguf:
// its load fails with a 500 naming it and the server goes on serving the others.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, skipReason, metrics, metric, MODEL } from './harness.mjs';

const skip = skipReason();
const DRAFT = MODEL ? path.join(path.dirname(MODEL), 'demo-draft.gguf') : '';
const IDLE_S = 2;
const KV = 64 << 20;  // --kv-cache-memory, split in two (max-loaded-models)
let server;
let client;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  if (skip) return;
  server = await startServer([
    '-m', `twin=${MODEL}`, '-m', `draft=${DRAFT}`, '--max-loaded-models', '2',
    '--idle-unload-seconds', String(IDLE_S), '--kv-cache-memory', String(KV),
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

async function states() {
  const out = {};
  for (const m of (await client.models.list()).data) out[m.id] = m.status;
  return out;
}

async function waitState(name, want, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await states();
    if (s[name] === want) return s;
    if (Date.now() > deadline) assert.fail(`${name} never became ${want}: ${JSON.stringify(s)}`);
    await sleep(100);
  }
}

async function rss() {
  const v = metric(await metrics(server.url), 'process_resident_memory_bytes');
  assert.ok(v > 0, `process_resident_memory_bytes: ${v}`);
  return v;
}

async function answer(model) {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 24, temperature: 0,
  });
  assert.equal(r.model, model);
  return r.choices[0].message.content;
}

test('two names of one model and a second model, loaded on use, unloaded when idle (RSS)', { skip }, async () => {
  assert.deepEqual(await states(), { demo: 'unloaded', twin: 'unloaded', draft: 'unloaded' });
  // A first load and unload, so that one-time costs (thread pools, allocator arenas) are in the
  // baseline.
  const demoText = await answer('demo');
  assert.ok(demoText.length > 0);
  assert.equal((await states()).demo, 'loaded');
  await waitState('demo', 'unloaded');
  const rss0 = await rss();

  const twinText = await answer('twin');
  assert.equal(twinText, demoText, 'the same weights under another name give the same greedy text');
  const draftText = await answer('draft');
  assert.ok(draftText.length > 0);
  assert.deepEqual(await states(), { demo: 'unloaded', twin: 'loaded', draft: 'loaded' });
  const rss1 = await rss();
  const weights = fs.statSync(MODEL).size + fs.statSync(DRAFT).size;
  console.log(`RSS: baseline ${(rss0 / 2 ** 20).toFixed(1)} MiB, twin + draft loaded ` +
              `${(rss1 / 2 ** 20).toFixed(1)} MiB (weights ${(weights / 2 ** 20).toFixed(1)} MiB)`);
  assert.ok(rss1 - rss0 >= weights, `loading grew RSS by ${rss1 - rss0} < the weights' ${weights}`);

  // The least recently used idle model (twin) makes room for demo.
  assert.equal(await answer('demo'), demoText);
  assert.deepEqual(await states(), { demo: 'loaded', twin: 'unloaded', draft: 'loaded' });

  await waitState('demo', 'unloaded');
  await waitState('draft', 'unloaded');
  const rss2 = await rss();
  const left = rss2 - rss0;
  const bound = fs.statSync(MODEL).size / 2;
  console.log(`RSS after the idle unload: ${(rss2 / 2 ** 20).toFixed(1)} MiB ` +
              `(${(left / 2 ** 20).toFixed(2)} MiB over the baseline; bound ${(bound / 2 ** 20).toFixed(2)} MiB)`);
  assert.ok(left < bound, `${left} bytes stayed resident after unloading (bound ${bound})`);
  assert.ok(rss1 - rss2 >= weights, 'unloading gave back at least the weights');

  // Per-model series in /metrics.
  const m = await metrics(server.url);
  assert.equal(metric(m, 'pagoda:model_loaded', { model_name: 'demo' }), 0);
  assert.ok(metric(m, 'vllm:request_success_total', { model_name: 'twin', finished_reason: 'length' }) >= 1);
  // Still serving: a request reloads an unloaded model.
  assert.equal(await answer('twin'), demoText);
});

test('unknown model: OpenAI 404 model_not_found', { skip }, async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'gpt-nope', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && /gpt-nope/.test(e.message),
  );
});

test('--models-dir: every model in the directory; a corrupt one fails alone', { skip }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-models-'));
  try {
    fs.symlinkSync(MODEL, path.join(dir, 'alpha.gguf'));
    fs.symlinkSync(DRAFT, path.join(dir, 'beta.gguf'));
    fs.writeFileSync(path.join(dir, 'broken.gguf'), Buffer.from('GGUF this is not a model'));
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'ignored');
    const s = await startServer(['--models-dir', dir]);
    try {
      const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const ids = (await c.models.list()).data.map((m) => m.id);
      assert.deepEqual(ids, ['demo', 'alpha', 'beta', 'broken']);
      await assert.rejects(
        c.completions.create({ model: 'broken', prompt: 'x', max_tokens: 2 }),
        (e) => e instanceof OpenAI.InternalServerError && /`broken` failed to load/.test(e.message),
      );
      const r = await c.completions.create({ model: 'beta', prompt: 'Once', max_tokens: 4 });
      assert.equal(r.model, 'beta');
      assert.equal((await fetch(`${s.url}/health`)).status, 200);
    } finally {
      assert.equal((await s.stop()).code, 0, s.log());
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
