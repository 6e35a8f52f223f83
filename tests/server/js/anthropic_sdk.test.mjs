// The official Anthropic Node SDK (@anthropic-ai/sdk) against `pagoda serve` on the bundled
// model: messages.create streamed and not (checked against the equivalent chat completion,
// greedy), stop_sequences, max_tokens, tools with tool_choice any / tool (arguments validated
// against input_schema), a tool_result turn, messages.countTokens, x-api-key auth, and
// Anthropic-shaped errors for malformed bodies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { startServer, skipReason } from './harness.mjs';

const skip = skipReason();
const here = path.dirname(fileURLToPath(import.meta.url));
const KEY = 'anthropic-test-key';
let server;
let client;
let openai;
let modelId;
const ajv = new Ajv({ strict: false });

before(async () => {
  if (skip) return;
  server = await startServer([
    '--max-num-seqs', '8', '--api-key', KEY,
    '--chat-template', path.join(here, 'hermes_tools.jinja'),
  ]);
  client = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
  modelId = (await openai.models.list()).data[0].id;
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

const system = 'You are a storyteller.';
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];

const weather = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string', maxLength: 20 }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
};
const clock = {
  name: 'get_time',
  description: 'Current time in a zone',
  input_schema: {
    type: 'object',
    properties: { zone: { type: 'string', enum: ['UTC', 'CET', 'PST'] } },
    required: ['zone'],
    additionalProperties: false,
  },
};
const validators = { get_weather: ajv.compile(weather.input_schema), get_time: ajv.compile(clock.input_schema) };

test('messages.create equals the chat completion of the same conversation (greedy)', { skip }, async () => {
  const m = await client.messages.create({
    model: modelId, system, messages, max_tokens: 16, temperature: 0,
  });
  assert.match(m.id, /^msg_/);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, modelId);
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.equal(m.stop_sequence, null);
  const chat = await openai.chat.completions.create({
    model: modelId, messages: [{ role: 'system', content: system }, ...messages],
    max_tokens: 16, temperature: 0,
  });
  const text = m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  assert.equal(text, chat.choices[0].message.content);
  assert.equal(m.stop_reason, chat.choices[0].finish_reason === 'length' ? 'max_tokens' : 'end_turn');
  assert.equal(m.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(m.usage.input_tokens + m.usage.cache_read_input_tokens, chat.usage.prompt_tokens);
  if (m.stop_reason === 'max_tokens') assert.equal(m.usage.output_tokens, 16);
});

test('streamed message: the event sequence, and the text equals the non-streamed one', { skip }, async () => {
  const body = { model: modelId, system, messages, max_tokens: 24, temperature: 0 };
  const full = await client.messages.create(body);
  const stream = await client.messages.create({ ...body, stream: true });
  const types = [];
  let text = '';
  let stop;
  let outputTokens;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta') {
      assert.equal(ev.delta.type, 'text_delta');
      text += ev.delta.text;
    }
    if (ev.type === 'message_delta') {
      stop = ev.delta.stop_reason;
      outputTokens = ev.usage.output_tokens;
    }
  }
  // ping is consumed by the SDK; the rest arrive in order.
  assert.equal(types[0], 'message_start');
  assert.equal(types[1], 'content_block_start');
  assert.ok(types.slice(2, -3).every((t) => t === 'content_block_delta'), types.join(','));
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(text, full.content[0].text);
  assert.equal(stop, full.stop_reason);
  assert.equal(outputTokens, full.usage.output_tokens);
  // The SDK's own accumulator agrees.
  const final = await client.messages.stream(body).finalMessage();
  assert.equal(final.content[0].text, full.content[0].text);
});

test('raw stream has ping right after the first content_block_start', { skip }, async () => {
  const r = await fetch(`${server.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: modelId, messages, max_tokens: 4, stream: true }),
  });
  assert.equal(r.status, 200);
  const events = (await r.text()).split('\n\n').filter(Boolean).map((e) => e.split('\n')[0]);
  assert.deepEqual(events.slice(0, 3), ['event: message_start', 'event: content_block_start', 'event: ping']);
  assert.equal(events.at(-1), 'event: message_stop');
});

test('stop_sequences end the message with stop_reason stop_sequence', { skip }, async () => {
  const probe = await client.messages.create({ model: modelId, messages, max_tokens: 24, temperature: 0 });
  const words = probe.content[0].text.trim().split(/\s+/);
  assert.ok(words.length >= 3, probe.content[0].text);
  const seq = words[2];
  const m = await client.messages.create({
    model: modelId, messages, max_tokens: 24, temperature: 0, stop_sequences: [seq],
  });
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, seq);
  assert.ok(!m.content[0].text.includes(seq));
  assert.ok(probe.content[0].text.startsWith(m.content[0].text));
});

test('tool_choice any gives tool_use blocks whose input validates', { skip }, async () => {
  for (const [temperature, content] of [[0, 'Weather in Paris?'], [0.7, 'What time is it in Berlin?']]) {
    const m = await client.messages.create({
      model: modelId, messages: [{ role: 'user', content }], tools: [weather, clock],
      tool_choice: { type: 'any', disable_parallel_tool_use: true }, max_tokens: 200, temperature,
      top_k: 40, metadata: { user_id: 'u1' },
    });
    assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
    const uses = m.content.filter((b) => b.type === 'tool_use');
    assert.equal(uses.length, 1);
    for (const u of uses) {
      assert.ok(validators[u.name], u.name);
      assert.ok(validators[u.name](u.input), JSON.stringify(u.input));
      assert.equal(typeof u.id, 'string');
    }
  }
});

test('streamed tool_use: input_json_delta pieces equal the non-streamed input', { skip }, async () => {
  const body = {
    model: modelId, messages: [{ role: 'user', content: 'What time is it?' }], tools: [weather, clock],
    tool_choice: { type: 'tool', name: 'get_time', disable_parallel_tool_use: true },
    max_tokens: 100, temperature: 0,
  };
  const full = await client.messages.create(body);
  assert.equal(full.stop_reason, 'tool_use');
  assert.equal(full.content.length, 1);
  assert.equal(full.content[0].name, 'get_time');
  const final = await client.messages.stream(body).finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  assert.equal(final.content[0].type, 'tool_use');
  assert.equal(final.content[0].name, 'get_time');
  assert.deepEqual(final.content[0].input, full.content[0].input);
});

test('a tool_result turn continues the conversation', { skip }, async () => {
  const first = await client.messages.create({
    model: modelId, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weather],
    tool_choice: { type: 'tool', name: 'get_weather' }, max_tokens: 100, temperature: 0,
  });
  const use = first.content.find((b) => b.type === 'tool_use');
  const turns = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21 degrees, sunny' }] },
  ];
  const m = await client.messages.create({
    model: modelId, messages: turns, tools: [weather], tool_choice: { type: 'none' }, max_tokens: 8,
    temperature: 0,
  });
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.ok(m.content.every((b) => b.type === 'text'));
  // The tool result is in the prompt: it counts.
  const count = (msgs) => client.messages.countTokens({
    model: modelId, messages: msgs, tools: [weather], tool_choice: { type: 'none' },
  });
  const withResult = await count(turns);
  const without = await count(turns.slice(0, 2));
  assert.ok(withResult.input_tokens > without.input_tokens);
  assert.equal(m.usage.input_tokens + m.usage.cache_read_input_tokens, withResult.input_tokens);
});

test('messages.countTokens equals the prompt tokens of the same request', { skip }, async () => {
  const n = await client.messages.countTokens({ model: modelId, system, messages });
  const m = await client.messages.create({ model: modelId, system, messages, max_tokens: 1 });
  assert.equal(n.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
  const tok = await fetch(`${server.url}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ messages: [{ role: 'system', content: system }, ...messages] }),
  }).then((r) => r.json());
  assert.equal(n.input_tokens, tok.count);
});

test('errors come in Anthropic shape with the SDK error classes', { skip }, async () => {
  const bad = new Anthropic({ baseURL: server.url, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(
    bad.messages.create({ model: modelId, messages, max_tokens: 4 }),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401 &&
      e.error.type === 'error' && e.error.error.type === 'authentication_error',
  );
  await assert.rejects(
    client.messages.create({ model: modelId, messages }),  // no max_tokens
    (e) => e instanceof Anthropic.BadRequestError && e.error.error.type === 'invalid_request_error' &&
      /max_tokens/.test(e.error.error.message),
  );
  await assert.rejects(
    client.messages.create({ model: modelId, messages, max_tokens: 4, thinking: { type: 'enabled', budget_tokens: 1024 } }),
    (e) => e instanceof Anthropic.BadRequestError && /'thinking'/.test(e.error.error.message),
  );
  await assert.rejects(
    client.messages.create({ model: modelId, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }], max_tokens: 4 }),
    (e) => e instanceof Anthropic.BadRequestError && /image/.test(e.error.error.message),
  );
  await assert.rejects(
    client.messages.create({ model: 'claude-nonexistent', messages, max_tokens: 4 }),
    (e) => e instanceof Anthropic.NotFoundError && e.error.error.type === 'not_found_error',
  );
  for (const body of ['{', '[]', '{"model": 1, "messages": [], "max_tokens": 1}']) {
    const r = await fetch(`${server.url}/v1/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body,
    });
    assert.equal(r.status, 400, body);
    const j = await r.json();
    assert.equal(j.type, 'error');
    assert.equal(j.error.type, 'invalid_request_error');
    assert.equal(typeof j.error.message, 'string');
  }
  // Unknown paths below /v1/messages are Anthropic-shaped too; other routes keep OpenAI's shape.
  const r = await fetch(`${server.url}/v1/messages/nope`, { method: 'POST', headers: { 'x-api-key': KEY } });
  assert.equal(r.status, 404);
  assert.equal((await r.json()).error.type, 'not_found_error');
  const o = await fetch(`${server.url}/v1/models`, { headers: { 'x-api-key': 'wrong' } });
  assert.equal(o.status, 401);
  assert.equal((await o.json()).error.code, 'invalid_api_key');
});
