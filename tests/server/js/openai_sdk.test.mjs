// The official OpenAI Node SDK against `pagoda serve` on the bundled model: chat and completions,
// streamed and not, n=2, logprobs, stop strings, seeds, usage, and the SDK's error classes for
// 400 / 401 / 404 / 429.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, skipReason } from './harness.mjs';

const skip = skipReason();
let server;
let client;
let modelId;

before(async () => {
  if (skip) return;
  server = await startServer(['--max-num-seqs', '8']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  modelId = (await client.models.list()).data[0].id;
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];

test('models list and retrieve', { skip }, async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].object, 'model');
  const m = await client.models.retrieve(modelId);
  assert.equal(m.id, modelId);
});

test('chat completion (non-streamed)', { skip }, async () => {
  const r = await client.chat.completions.create({
    model: modelId, messages, max_tokens: 12, temperature: 0,
  });
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, modelId);
  assert.equal(typeof r.created, 'number');
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
  if (c.finish_reason === 'length') assert.equal(r.usage.completion_tokens, 12);
});

test('chat completion streamed equals non-streamed (greedy)', { skip }, async () => {
  const body = { model: modelId, messages, max_tokens: 24, temperature: 0 };
  const full = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({
    ...body, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let finish = null;
  let usage = null;
  let first = true;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    assert.equal(chunk.id, stream.id ?? chunk.id);
    if (chunk.usage) {
      usage = chunk.usage;
      assert.equal(chunk.choices.length, 0);
      continue;
    }
    const c = chunk.choices[0];
    if (first) {
      assert.equal(c.delta.role, 'assistant');
      first = false;
    }
    text += c.delta.content ?? '';
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(text, full.choices[0].message.content);
  assert.equal(finish, full.choices[0].finish_reason);
  assert.deepEqual(usage, full.usage);
});

test('completions, streamed and not, with n=2', { skip }, async () => {
  const body = { model: modelId, prompt: 'Once upon a time', max_tokens: 16, temperature: 0, n: 2 };
  const full = await client.completions.create(body);
  assert.match(full.id, /^cmpl-/);
  assert.equal(full.object, 'text_completion');
  assert.deepEqual(full.choices.map((c) => c.index), [0, 1]);
  // Greedy: both samples are the same text.
  assert.equal(full.choices[0].text, full.choices[1].text);
  assert.ok(full.usage.completion_tokens >= 2);

  const stream = await client.completions.create({ ...body, stream: true });
  const texts = ['', ''];
  const finishes = [null, null];
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'text_completion');
    for (const c of chunk.choices) {
      texts[c.index] += c.text;
      if (c.finish_reason) finishes[c.index] = c.finish_reason;
    }
  }
  assert.deepEqual(texts, full.choices.map((c) => c.text));
  assert.deepEqual(finishes, full.choices.map((c) => c.finish_reason));
});

test('completions with a batch of prompts', { skip }, async () => {
  const r = await client.completions.create({
    model: modelId, prompt: ['Once upon a time', 'The dog'], max_tokens: 4, temperature: 0,
  });
  assert.equal(r.choices.length, 2);
  const single = await client.completions.create({
    model: modelId, prompt: 'The dog', max_tokens: 4, temperature: 0,
  });
  assert.equal(r.choices[1].text, single.choices[0].text);
});

test('chat logprobs: greedy picks the top alternative', { skip }, async () => {
  const r = await client.chat.completions.create({
    model: modelId, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3,
  });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const entry of lp) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    const tops = entry.top_logprobs.map((t) => t.logprob);
    for (let i = 1; i < tops.length; ++i) assert.ok(tops[i - 1] >= tops[i]);
    // Greedy: the chosen token is the most likely one.
    assert.ok(Math.abs(entry.logprob - tops[0]) < 1e-4);
    assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, 'utf8')]);
  }
});

test('completions logprobs (int) and text offsets', { skip }, async () => {
  const r = await client.completions.create({
    model: modelId, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 2,
  });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.completion_tokens);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(lp.top_logprobs.length, lp.tokens.length);
  for (let i = 0; i < lp.tokens.length; ++i) {
    assert.ok(Object.keys(lp.top_logprobs[i]).length >= 1);
    if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
  }
});

test('stop strings: the text ends right before the first match', { skip }, async () => {
  const base = { model: modelId, prompt: 'Once upon a time', max_tokens: 40, temperature: 0 };
  const free = (await client.completions.create(base)).choices[0].text;
  assert.ok(free.length > 10, `generated text too short: ${JSON.stringify(free)}`);
  // A stop string taken from the middle of the unconstrained text.
  let pos = Math.floor(free.length / 2);
  const stop = free.slice(pos, pos + 3);
  pos = free.indexOf(stop);
  for (const stream of [false, true]) {
    let text = '';
    let finish;
    let stopReason;
    if (stream) {
      for await (const chunk of await client.completions.create({ ...base, stop: [stop], stream })) {
        text += chunk.choices[0]?.text ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        stopReason = chunk.choices[0]?.stop_reason ?? stopReason;
      }
    } else {
      const r = await client.completions.create({ ...base, stop });
      text = r.choices[0].text;
      finish = r.choices[0].finish_reason;
      stopReason = r.choices[0].stop_reason;
    }
    assert.equal(text, free.slice(0, pos), `stream=${stream}`);
    assert.equal(finish, 'stop');
    assert.equal(stopReason, stop);
  }
});

test('seeded sampling is deterministic', { skip }, async () => {
  const body = { model: modelId, messages, max_tokens: 16, temperature: 1.0, seed: 1234 };
  const a = await client.chat.completions.create(body);
  const b = await client.chat.completions.create(body);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  const c = await client.chat.completions.create({ ...body, stream: true });
  let text = '';
  for await (const chunk of c) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, a.choices[0].message.content);
});

test('400 BadRequestError names the field', { skip }, async () => {
  await assert.rejects(
    client.chat.completions.create({ model: modelId, messages, temperature: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'temperature',
  );
  await assert.rejects(
    client.chat.completions.create({ model: modelId, messages, max_tokens: 100000 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens',
  );
  await assert.rejects(
    client.chat.completions.create({ model: modelId, messages, n: 1000 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'n',
  );
  await assert.rejects(
    client.chat.completions.create({ model: modelId, messages, logprobs: true, top_logprobs: 21 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'top_logprobs',
  );
});

test('404 NotFoundError for an unknown model', { skip }, async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404,
  );
});

test('401 AuthenticationError with a wrong key; /health stays public', { skip }, async () => {
  const keyed = await startServer(['--api-key', 'sekret']);
  try {
    const bad = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    const good = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
    assert.equal((await good.models.list()).data.length, 1);
    assert.equal((await fetch(`${keyed.url}/health`)).status, 200);
  } finally {
    assert.equal((await keyed.stop()).code, 0);
  }
});

test('429 RateLimitError when the queue is full', { skip }, async () => {
  const small = await startServer(['--max-num-seqs', '1', '--max-queue', '1']);
  try {
    const c = new OpenAI({ baseURL: `${small.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const long = { model: modelId, prompt: 'Once', max_tokens: 400, ignore_eos: true };
    // Eight long requests at once: one runs, at most one waits, the others arrive while both
    // slots are busy (400 tokens take far longer than the burst) and are refused.
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => c.completions.create(long)),
    );
    const refused = results.filter((r) => r.status === 'rejected');
    const served = results.filter((r) => r.status === 'fulfilled');
    // At least the first is served (the second may still find it waiting, i.e. the queue full).
    assert.ok(served.length >= 1, `served ${served.length}`);
    assert.ok(refused.length >= 1, 'no request was refused');
    for (const r of refused) {
      assert.ok(r.reason instanceof OpenAI.RateLimitError, String(r.reason));
      assert.equal(r.reason.status, 429);
      const h = r.reason.headers;
      const retryAfter = typeof h?.get === 'function' ? h.get('retry-after') : h?.['retry-after'];
      assert.ok(Number(retryAfter) >= 1, `Retry-After: ${retryAfter}`);
    }
    for (const r of served) assert.equal(r.value.usage.completion_tokens, 400);
  } finally {
    assert.equal((await small.stop()).code, 0);
  }
});
