// Structured output and tool calling through the official OpenAI Node SDK against `pagoda serve`
// on the bundled model (a tiny model that writes nonsense: every structure below comes from the
// grammar, so these check the enforcement, the API shapes and the parsers, not the model):
// chat.completions.parse with a zod schema, json_object, json_schema on completions, vLLM's
// guided_* / structured_outputs and llama.cpp's grammar / json_schema fields, tools with
// tool_choice required / named (streamed and not, arguments checked with ajv against the
// parameters schema), a multi-turn conversation with tool results, refusals naming the field or
// keyword, 16 concurrent requests mixing free text and schemas, and the reasoning parser.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
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
    '--max-num-seqs', '16', '--chat-template', path.join(here, 'hermes_tools.jinja'),
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  modelId = (await client.models.list()).data[0].id;
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

const user = (content) => [{ role: 'user', content }];

async function post(route, body) {
  const r = await fetch(`${server.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: modelId, ...body }),
  });
  return { status: r.status, body: await r.json() };
}

const Person = z.object({
  name: z.string().max(12),
  age: z.number().int().min(0).max(120),
  role: z.enum(['admin', 'user', 'guest']),
  tags: z.array(z.enum(['a', 'b', 'c'])).max(3),
});

test('chat.completions.parse with a zod schema returns a parsed object', { skip }, async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.parse({
      model: modelId,
      messages: user('Describe a person as JSON.'),
      response_format: zodResponseFormat(Person, 'person'),
      max_tokens: 300,
      temperature: 0.8,
      seed,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'stop', JSON.stringify(c));
    assert.ok(c.message.parsed, `no parsed object: ${c.message.content}`);
    assert.deepEqual(Person.parse(c.message.parsed), c.message.parsed);
    assert.deepEqual(JSON.parse(c.message.content), c.message.parsed);
  }
});

test('json_object mode returns a JSON object', { skip }, async () => {
  // The demo model would ramble inside the object until max_tokens: a bias towards '}' and '"'
  // lets the grammar close it sooner; the constraint alone decides validity.
  for (const seed of [1, 2]) {
    const r = await client.chat.completions.create({
      model: modelId, messages: user('Give me JSON.'), response_format: { type: 'json_object' },
      max_tokens: 400, temperature: 0.7, seed,
    });
    const c = r.choices[0];
    if (c.finish_reason === 'stop') {
      const v = JSON.parse(c.message.content);
      assert.equal(typeof v, 'object');
      assert.ok(v !== null && !Array.isArray(v));
    } else {
      assert.equal(c.finish_reason, 'length');
      assert.match(c.message.content, /^\s*\{/);
    }
  }
});

test('json_schema on /v1/completions and the llama.cpp json_schema field', { skip }, async () => {
  const schema = {
    type: 'object',
    properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 1, maximum: 9 } },
    required: ['ok', 'n'],
    additionalProperties: false,
  };
  const validate = ajv.compile(schema);
  const r1 = await client.completions.create({
    model: modelId, prompt: 'Answer:', max_tokens: 60, temperature: 0.9, seed: 5,
    response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
  });
  assert.equal(r1.choices[0].finish_reason, 'stop');
  assert.ok(validate(JSON.parse(r1.choices[0].text)), r1.choices[0].text);
  const r2 = await post('/v1/chat/completions', {
    messages: user('x'), json_schema: schema, max_tokens: 60, seed: 6, temperature: 0.9,
  });
  assert.equal(r2.status, 200, JSON.stringify(r2.body));
  assert.ok(validate(JSON.parse(r2.body.choices[0].message.content)));
});

test('guided_regex, guided_choice, structured_outputs and a GBNF grammar', { skip }, async () => {
  const regex = await post('/v1/chat/completions', {
    messages: user('a date'), guided_regex: '[0-9]{4}-[0-9]{2}-[0-9]{2}', max_tokens: 20,
  });
  assert.equal(regex.status, 200, JSON.stringify(regex.body));
  assert.match(regex.body.choices[0].message.content, /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/);
  const choice = await post('/v1/completions', {
    prompt: 'Pick:', guided_choice: ['red', 'green', 'blue'], max_tokens: 10, seed: 3,
    temperature: 1,
  });
  assert.equal(choice.status, 200, JSON.stringify(choice.body));
  assert.ok(['red', 'green', 'blue'].includes(choice.body.choices[0].text));
  const so = await post('/v1/chat/completions', {
    messages: user('yes or no'), structured_outputs: { choice: ['yes', 'no'] }, max_tokens: 5,
  });
  assert.equal(so.status, 200, JSON.stringify(so.body));
  assert.ok(['yes', 'no'].includes(so.body.choices[0].message.content));
  const gbnf = await post('/v1/chat/completions', {
    messages: user('count'),
    grammar: 'root ::= "n=" [1-9] [0-9]? ("," [1-9])*',
    max_tokens: 12, temperature: 0.9, seed: 2,
  });
  assert.equal(gbnf.status, 200, JSON.stringify(gbnf.body));
  const text = gbnf.body.choices[0].message.content;
  if (gbnf.body.choices[0].finish_reason === 'stop') assert.match(text, /^n=[1-9][0-9]?(,[1-9])*$/);
  else assert.match(text, /^n=[1-9][0-9]?(,[1-9])*,?$/);
});

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', maxLength: 16 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const clock = {
  type: 'function',
  function: {
    name: 'get_time',
    parameters: {
      type: 'object',
      properties: { zone: { type: 'string', enum: ['UTC', 'CET', 'PST'] } },
      required: ['zone'],
      additionalProperties: false,
    },
  },
};
const validators = {
  get_weather: ajv.compile(weather.function.parameters),
  get_time: ajv.compile(clock.function.parameters),
};

function checkCalls(calls, allowed) {
  assert.ok(Array.isArray(calls) && calls.length >= 1, `no tool calls: ${JSON.stringify(calls)}`);
  for (const call of calls) {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_/);
    assert.ok(allowed.includes(call.function.name), call.function.name);
    const args = JSON.parse(call.function.arguments);
    assert.ok(validators[call.function.name](args), JSON.stringify(args));
  }
  assert.equal(new Set(calls.map((c) => c.id)).size, calls.length);
}

test('tool_choice required returns valid tool_calls', { skip }, async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model: modelId, messages: user('Weather in Paris?'), tools: [weather, clock],
      tool_choice: 'required', max_tokens: 200, temperature: 0.8, seed,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.equal(c.message.content, null);
    checkCalls(c.message.tool_calls, ['get_weather', 'get_time']);
  }
});

test('a named tool_choice calls that function; parallel_tool_calls false gives one call',
  { skip }, async () => {
    const r = await client.chat.completions.create({
      model: modelId, messages: user('What time is it?'), tools: [weather, clock],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      parallel_tool_calls: false, max_tokens: 100, temperature: 1, seed: 9,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.tool_calls.length, 1);
    checkCalls(c.message.tool_calls, ['get_time']);
  });

test('streamed tool calls arrive as delta.tool_calls and equal the non-streamed ones',
  { skip }, async () => {
    const body = {
      model: modelId, messages: user('Weather?'), tools: [weather, clock],
      tool_choice: 'required', max_tokens: 200, temperature: 0,
    };
    const full = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true });
    const calls = [];
    let finish = null;
    let deltas = 0;
    for await (const chunk of stream) {
      const ch = chunk.choices[0];
      if (!ch) continue;
      for (const d of ch.delta.tool_calls ?? []) {
        deltas += 1;
        if (!calls[d.index]) {
          assert.ok(d.id && d.function.name, `first delta of a call lacks id/name: ${JSON.stringify(d)}`);
          calls[d.index] = { id: d.id, type: 'function', function: { name: d.function.name, arguments: '' } };
        }
        calls[d.index].function.arguments += d.function.arguments ?? '';
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    assert.equal(finish, 'tool_calls');
    checkCalls(calls, ['get_weather', 'get_time']);
    assert.ok(deltas > calls.length, `arguments were not streamed incrementally (${deltas} deltas)`);
    assert.deepEqual(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
      full.choices[0].message.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]));
  });

test('a multi-turn conversation with tool results', { skip }, async () => {
  const messages = user('Weather in Oslo, then the time?');
  const first = await client.chat.completions.create({
    model: modelId, messages, tools: [weather, clock], tool_choice: 'required',
    parallel_tool_calls: false, max_tokens: 100, temperature: 0,
  });
  const msg = first.choices[0].message;
  checkCalls(msg.tool_calls, ['get_weather', 'get_time']);
  messages.push(msg);
  messages.push({ role: 'tool', tool_call_id: msg.tool_calls[0].id, content: '{"temp": 3}' });
  const second = await client.chat.completions.create({
    model: modelId, messages, tools: [weather, clock],
    tool_choice: { type: 'function', function: { name: 'get_time' } },
    max_tokens: 100, temperature: 0,
  });
  checkCalls(second.choices[0].message.tool_calls, ['get_time']);
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens + 10,
    'the tool call and its result were not rendered into the prompt');
  // And a final free-text answer after the results (tool_choice auto: the model may answer).
  messages.push(second.choices[0].message);
  messages.push({ role: 'tool', tool_call_id: second.choices[0].message.tool_calls[0].id, content: '12:00' });
  const third = await client.chat.completions.create({
    model: modelId, messages, tools: [weather, clock], max_tokens: 16, temperature: 0,
  });
  assert.ok(['stop', 'length', 'tool_calls'].includes(third.choices[0].finish_reason));
});

test('refusals: an unsupported schema keyword, two constraints, a bad tool_choice', { skip }, async () => {
  await assert.rejects(
    client.chat.completions.create({
      model: modelId, messages: user('x'), max_tokens: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object', not: { required: ['a'] } } } },
    }),
    (e) => e instanceof OpenAI.BadRequestError && /'not'/.test(e.message),
  );
  const both = await post('/v1/chat/completions', {
    messages: user('x'), guided_regex: 'a', guided_choice: ['b'],
  });
  assert.equal(both.status, 400);
  assert.equal(both.body.error.param, 'guided_choice');
  const unknown = await post('/v1/chat/completions', {
    messages: user('x'), tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } },
  });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.error.param, 'tool_choice.function.name');
  const rf = await post('/v1/chat/completions', {
    messages: user('x'), response_format: { type: 'json_schema', json_schema: { name: 'a', schema: {}, extra: 1 } },
  });
  assert.equal(rf.status, 400);
  assert.equal(rf.body.error.param, 'response_format.json_schema.extra');
  const badRegex = await post('/v1/chat/completions', { messages: user('x'), guided_regex: '(' });
  assert.equal(badRegex.status, 400, JSON.stringify(badRegex.body));
  // Parses, but no text satisfies it: found by the background compile, still a 400 (stream too).
  for (const stream of [false, true]) {
    const empty = await post('/v1/chat/completions', {
      messages: user('x'), grammar: 'root ::= root "a"', stream,
    });
    assert.equal(empty.status, 400, JSON.stringify(empty.body));
    assert.match(empty.body.error.message, /no text satisfies it/);
    assert.equal(empty.body.error.type, 'invalid_request_error');
  }
  const noTools = await post('/v1/chat/completions', { messages: user('x'), tool_choice: 'required' });
  assert.equal(noTools.status, 400);
  assert.equal(noTools.body.error.param, 'tool_choice');
});

test('16 concurrent requests mixing free text and different schemas all validate', { skip }, async () => {
  const schemas = [
    { type: 'object', properties: { a: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['a'], additionalProperties: false },
    { type: 'array', items: { type: 'string', enum: ['x', 'y'] }, minItems: 1, maxItems: 4 },
    { type: 'object', properties: { ok: { type: 'boolean' }, note: { type: ['string', 'null'], maxLength: 8 } }, required: ['ok', 'note'], additionalProperties: false },
    { anyOf: [{ type: 'integer', minimum: 1, maximum: 5 }, { type: 'string', enum: ['none'] }] },
  ];
  const jobs = [];
  for (let i = 0; i < 16; i += 1) {
    if (i % 4 === 3) {
      jobs.push(client.chat.completions.create({
        model: modelId, messages: user(`Story ${i}`), max_tokens: 24, temperature: 0.9, seed: i,
      }).then((r) => ({ free: true, r })));
    } else {
      const schema = schemas[Math.floor(i / 4) % schemas.length];
      jobs.push(client.chat.completions.create({
        model: modelId, messages: user(`JSON ${i}`), max_tokens: 120, temperature: 0.9, seed: i,
        response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema } },
      }).then((r) => ({ schema, r })));
    }
  }
  const results = await Promise.all(jobs);
  for (const { free, schema, r } of results) {
    const c = r.choices[0];
    if (free) {
      assert.equal(typeof c.message.content, 'string');
      continue;
    }
    assert.equal(c.finish_reason, 'stop', `${JSON.stringify(schema)}: ${c.message.content}`);
    assert.ok(ajv.validate(schema, JSON.parse(c.message.content)), c.message.content);
  }
});

test('--reasoning-parser deepseek_r1: output before </think> is reasoning_content', { skip }, async () => {
  // The demo model never writes </think>: its whole output is reasoning (the R1 template opens
  // <think> in the prompt), content is null, and a schema would apply only after </think>.
  const srv = await startServer(['--reasoning-parser', 'deepseek_r1', '--max-num-seqs', '4']);
  try {
    const c = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const body = {
      model: modelId, messages: user('Think about cats.'), max_tokens: 24, temperature: 0,
    };
    const r = await c.chat.completions.create(body);
    const m = r.choices[0].message;
    assert.equal(m.content, null, JSON.stringify(m));
    assert.ok(m.reasoning_content.length > 0);
    const stream = await c.chat.completions.create({ ...body, stream: true });
    let reasoning = '';
    let content = '';
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta ?? {};
      reasoning += d.reasoning_content ?? '';
      content += d.content ?? '';
    }
    assert.equal(reasoning, m.reasoning_content);
    assert.equal(content, '');
    // With a schema, the answer after </think> is constrained; before it the model is free.
    const constrained = await c.chat.completions.create({
      ...body, response_format: { type: 'json_object' },
    });
    assert.equal(constrained.choices[0].message.reasoning_content, m.reasoning_content);
  } finally {
    assert.equal((await srv.stop()).code, 0, srv.log());
  }
});
