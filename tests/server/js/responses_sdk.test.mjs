// The official OpenAI Node SDK's Responses API (client.responses.*) against `pagoda serve` on the
// bundled model: create streamed and not (checked against the equivalent chat completion,
// greedy), the typed SSE events and their sequence numbers, instructions, max_output_tokens
// (status incomplete), function tools and function_call_output items, text.format json_schema,
// previous_response_id over stored responses, retrieve and delete, store: false, and OpenAI-shaped
// errors for malformed bodies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { startServer, skipReason } from './harness.mjs';

const skip = skipReason();
const here = path.dirname(fileURLToPath(import.meta.url));
let server;
let client;
let modelId;
const ajv = new Ajv({ strict: false });

before(async () => {
  if (skip) return;
  server = await startServer([
    '--max-num-seqs', '8', '--chat-template', path.join(here, 'hermes_tools.jinja'),
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  modelId = (await client.models.list()).data[0].id;
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

const instructions = 'You are a storyteller.';
const question = 'Tell me a story about a cat.';

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', maxLength: 20 }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
  strict: true,
};

test('responses.create equals the chat completion of the same conversation (greedy)', { skip }, async () => {
  const r = await client.responses.create({
    model: modelId, instructions, input: question, max_output_tokens: 16, temperature: 0,
  });
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.model, modelId);
  assert.equal(r.instructions, instructions);
  assert.equal(r.output.length, 1);
  const item = r.output[0];
  assert.equal(item.type, 'message');
  assert.equal(item.role, 'assistant');
  assert.equal(item.content[0].type, 'output_text');
  const chat = await client.chat.completions.create({
    model: modelId, messages: [{ role: 'system', content: instructions }, { role: 'user', content: question }],
    max_tokens: 16, temperature: 0,
  });
  assert.equal(r.output_text, chat.choices[0].message.content);
  const length = chat.choices[0].finish_reason === 'length';
  assert.equal(r.status, length ? 'incomplete' : 'completed');
  assert.deepEqual(r.incomplete_details, length ? { reason: 'max_output_tokens' } : null);
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
});

test('streamed response: typed events in order with sequence numbers; equals non-streamed', { skip }, async () => {
  const body = { model: modelId, input: question, max_output_tokens: 24, temperature: 0 };
  const full = await client.responses.create(body);
  const stream = await client.responses.create({ ...body, stream: true });
  const events = [];
  for await (const ev of stream) events.push(ev);
  const types = events.map((e) => e.type);
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  assert.deepEqual(types.slice(0, 4), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
  ]);
  const last = full.status === 'completed' ? 'response.completed' : 'response.incomplete';
  assert.deepEqual(types.slice(-4), [
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done', last,
  ]);
  assert.ok(types.slice(4, -4).every((t) => t === 'response.output_text.delta'), types.join(','));
  const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  assert.equal(text, full.output_text);
  assert.equal(events.at(-4).text, text);
  const final = events.at(-1).response;
  assert.equal(final.status, full.status);
  assert.equal(final.output[0].content[0].text, text);
  assert.equal(final.output[0].id, events[2].item.id);
  assert.equal(final.usage.output_tokens, full.usage.output_tokens);
  // The SDK's own stream helper agrees.
  const helper = await client.responses.stream(body).finalResponse();
  assert.equal(helper.output_text, full.output_text);
});

test('previous_response_id continues a stored conversation; retrieve and delete', { skip }, async () => {
  const first = await client.responses.create({
    model: modelId, input: question, max_output_tokens: 8, temperature: 0,
  });
  const got = await client.responses.retrieve(first.id);
  assert.deepEqual(got, first);
  const second = await client.responses.create({
    model: modelId, previous_response_id: first.id, input: 'And then?', max_output_tokens: 8,
    temperature: 0,
  });
  assert.equal(second.previous_response_id, first.id);
  // The same conversation sent explicitly gives the same prompt and the same greedy answer.
  const explicit = await client.responses.create({
    model: modelId, store: false, max_output_tokens: 8, temperature: 0,
    input: [
      { role: 'user', content: question },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: [{ type: 'input_text', text: 'And then?' }] },
    ],
  });
  assert.equal(explicit.usage.input_tokens, second.usage.input_tokens);
  assert.equal(explicit.output_text, second.output_text);
  assert.ok(second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens);
  // store: false is not retrievable.
  await assert.rejects(client.responses.retrieve(explicit.id), (e) => e instanceof OpenAI.NotFoundError);
  await client.responses.delete(first.id);
  await assert.rejects(client.responses.retrieve(first.id), (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(client.responses.delete(first.id), (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(
    client.responses.create({ model: modelId, previous_response_id: first.id, input: 'x', max_output_tokens: 4 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'previous_response_id',
  );
});

test('function tools: function_call items, streamed arguments, function_call_output turn', { skip }, async () => {
  const body = {
    model: modelId, input: 'Weather in Paris?', tools: [weather],
    tool_choice: { type: 'function', name: 'get_weather' }, parallel_tool_calls: false,
    max_output_tokens: 100, temperature: 0,
  };
  const r = await client.responses.create(body);
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(r.output));
  assert.equal(calls[0].name, 'get_weather');
  assert.ok(ajv.validate(weather.parameters, JSON.parse(calls[0].arguments)), calls[0].arguments);
  const stream = await client.responses.create({ ...body, stream: true });
  let args = '';
  const types = [];
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
  }
  assert.equal(args, calls[0].arguments);
  assert.ok(types.includes('response.function_call_arguments.done'));
  assert.equal(types.at(-1), r.status === 'completed' ? 'response.completed' : 'response.incomplete');
  // Hand the result back, continuing from the stored response.
  const next = await client.responses.create({
    model: modelId, previous_response_id: r.id, tools: [weather], tool_choice: 'none',
    input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: '21 degrees, sunny' }],
    max_output_tokens: 8, temperature: 0,
  });
  assert.ok(next.output.every((o) => o.type === 'message'));
  // The same turn with the call items sent explicitly has the same prompt.
  const explicit = await client.responses.create({
    model: modelId, store: false, tools: [weather], tool_choice: 'none', max_output_tokens: 8,
    temperature: 0,
    input: [
      { role: 'user', content: 'Weather in Paris?' },
      { type: 'function_call', call_id: calls[0].call_id, name: 'get_weather', arguments: calls[0].arguments },
      { type: 'function_call_output', call_id: calls[0].call_id, output: '21 degrees, sunny' },
    ],
  });
  assert.equal(explicit.usage.input_tokens, next.usage.input_tokens);
  assert.equal(explicit.output_text, next.output_text);
});

test('text.format json_schema gives JSON that validates', { skip }, async () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
    required: ['name', 'age'],
    additionalProperties: false,
  };
  const r = await client.responses.create({
    model: modelId, input: 'Describe a person as JSON.', max_output_tokens: 100, temperature: 0.7,
    text: { format: { type: 'json_schema', name: 'person', schema, strict: true } },
  });
  assert.equal(r.status, 'completed', JSON.stringify(r));
  assert.ok(ajv.validate(schema, JSON.parse(r.output_text)), r.output_text);
});

test('malformed bodies get OpenAI-shaped errors naming the field', { skip }, async () => {
  const cases = [
    [{ model: modelId }, 'input'],
    [{ model: modelId, input: 'x', reasoning: { effort: 'high' } }, 'reasoning'],
    [{ model: modelId, input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
    [{ model: modelId, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0].type'],
    [{ model: modelId, input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ model: modelId, input: 'x', text: { format: { type: 'yaml' } } }, 'text.format.type'],
  ];
  for (const [body, param] of cases) {
    await assert.rejects(client.responses.create(body),
      (e) => e instanceof OpenAI.BadRequestError && e.param === param && e.type === 'invalid_request_error',
      JSON.stringify(body));
  }
  const r = await fetch(`${server.url}/v1/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"input": ',
  });
  assert.equal(r.status, 400);
  const j = await r.json();
  assert.equal(j.error.type, 'invalid_request_error');
  assert.equal(typeof j.error.message, 'string');
});
