// Speculative decoding through the official OpenAI Node SDK: `pagoda serve` with the demo
// model drafted by models/demo-draft.gguf (--speculative-model) answers greedy chat and
// completions, streamed and not, exactly as the same server without speculation (a streamed
// delta may now carry several tokens: the concatenation is compared), and /metrics counts the
// drafts and accepted tokens. `pagoda bench serve --json` against it reports the acceptance.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import OpenAI from 'openai';
import { BIN, MODEL, startServer, skipReason, metrics, metric } from './harness.mjs';

const skip = skipReason();
const DRAFT = MODEL ? path.join(path.dirname(MODEL), 'demo-draft.gguf') : '';
let plain;
let spec;
let model;

const client = (server) =>
  new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });

before(async () => {
  if (skip) return;
  [plain, spec] = await Promise.all([
    startServer(['--max-num-seqs', '4'], { threads: 1 }),
    startServer(['--max-num-seqs', '4', '--speculative-model', DRAFT,
      '--num-speculative-tokens', '4'], { threads: 1 }),
  ]);
  model = (await client(plain).models.list()).data[0].id;
});

after(async () => {
  if (plain) assert.equal((await plain.stop()).code, 0, plain.log());
  if (spec) assert.equal((await spec.stop()).code, 0, spec.log());
});

const specCounters = async () => {
  const m = await metrics(spec.url);
  return {
    drafts: metric(m, 'vllm:spec_decode_num_drafts_total'),
    draftTokens: metric(m, 'vllm:spec_decode_num_draft_tokens_total'),
    accepted: metric(m, 'vllm:spec_decode_num_accepted_tokens_total'),
  };
};

const chats = [
  [{ role: 'user', content: 'Tell me a story about a cat.' }],
  [{ role: 'user', content: 'Once upon a time there was a little dog. What happened next?' }],
];
const prompts = ['Once upon a time, there was a girl named Lily. She', 'The sun was'];

async function streamedChat(c, body) {
  const stream = await c.chat.completions.create({ ...body, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta?.content ?? '';
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, finish };
}

async function streamedCompletion(c, body) {
  const stream = await c.completions.create({ ...body, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.text ?? '';
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, finish };
}

test('greedy chat equals the server without speculation, streamed and not', { skip }, async () => {
  const before = await specCounters();
  for (const messages of chats) {
    const body = { model, messages, max_tokens: 64, temperature: 0 };
    const want = await client(plain).chat.completions.create(body);
    const got = await client(spec).chat.completions.create(body);
    assert.equal(got.choices[0].message.content, want.choices[0].message.content);
    assert.equal(got.choices[0].finish_reason, want.choices[0].finish_reason);
    assert.equal(got.usage.completion_tokens, want.usage.completion_tokens);
    const streamed = await streamedChat(client(spec), body);
    assert.equal(streamed.text, want.choices[0].message.content);
    assert.equal(streamed.finish, want.choices[0].finish_reason);
  }
  const after = await specCounters();
  assert.ok(after.drafts > before.drafts, `no drafts: ${JSON.stringify(after)}`);
});

test('greedy completions equal the server without speculation, streamed and not', { skip },
  async () => {
    for (const prompt of prompts) {
      const body = { model, prompt, max_tokens: 64, temperature: 0 };
      const want = await client(plain).completions.create(body);
      const got = await client(spec).completions.create(body);
      assert.equal(got.choices[0].text, want.choices[0].text);
      assert.equal(got.choices[0].finish_reason, want.choices[0].finish_reason);
      assert.equal(got.usage.completion_tokens, want.usage.completion_tokens);
      const streamed = await streamedCompletion(client(spec), body);
      assert.equal(streamed.text, want.choices[0].text);
      assert.equal(streamed.finish, want.choices[0].finish_reason);
      // A stop string inside an accepted run: the text ends before it, as without speculation.
      const stop = want.choices[0].text.slice(10, 13);
      if (stop.length === 3) {
        const a = await client(plain).completions.create({ ...body, stop: [stop] });
        const b = await client(spec).completions.create({ ...body, stop: [stop] });
        assert.equal(b.choices[0].text, a.choices[0].text);
        const s = await streamedCompletion(client(spec), { ...body, stop: [stop] });
        assert.equal(s.text, a.choices[0].text);
      }
    }
  });

test('metrics count drafts and accepted tokens', { skip }, async () => {
  const c = await specCounters();
  assert.ok(c.drafts > 0, JSON.stringify(c));
  assert.ok(c.draftTokens >= c.drafts, JSON.stringify(c));
  assert.ok(c.accepted > 0, JSON.stringify(c));
  assert.ok(c.accepted <= c.draftTokens, JSON.stringify(c));
  // The server without speculation drafts nothing.
  const p = await metrics(plain.url);
  assert.ok(!(metric(p, 'vllm:spec_decode_num_drafts_total') > 0));
});

function run(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d) => { out += d; });
    proc.stderr.on('data', (d) => { err += d; });
    proc.on('error', reject);
    proc.on('exit', (code) => resolve({ code, out, err }));
  });
}

test('bench serve --json reports the run\'s acceptance', { skip }, async () => {
  const before = await specCounters();
  const r = await run(['bench', 'serve', '--url', spec.url, '--num-prompts', '3',
    '--concurrency', '1', '--input-len', '16', '--output-len', '24', '--json']);
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  const after = await specCounters();
  assert.equal(j.completed, 3);
  // The report is the difference of the counters over the run (nothing else ran meanwhile).
  assert.equal(j.spec_decode_num_drafts, after.drafts - before.drafts);
  assert.equal(j.spec_decode_num_draft_tokens, after.draftTokens - before.draftTokens);
  assert.equal(j.spec_decode_num_accepted_tokens, after.accepted - before.accepted);
  assert.ok(j.spec_decode_num_drafts > 0, r.out);
  const rate = j.spec_decode_num_accepted_tokens / j.spec_decode_num_draft_tokens;
  assert.ok(Math.abs(j.spec_decode_acceptance_rate - rate) < 1e-9, r.out);
  const len = 1 + j.spec_decode_num_accepted_tokens / j.spec_decode_num_drafts;
  assert.ok(Math.abs(j.spec_decode_mean_accepted_length - len) < 1e-9, r.out);
  // Without speculation nothing is drafted, and no rates are reported.
  const p = await run(['bench', 'serve', '--url', plain.url, '--num-prompts', '1',
    '--input-len', '8', '--output-len', '4', '--json']);
  assert.equal(p.code, 0, p.err);
  const pj = JSON.parse(p.out);
  assert.equal(pj.spec_decode_num_drafts ?? 0, 0);
  assert.equal(pj.spec_decode_acceptance_rate, undefined);
  assert.equal(pj.spec_decode_mean_accepted_length, undefined);
});
