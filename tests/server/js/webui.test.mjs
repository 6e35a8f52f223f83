// The built-in web page (GET /) in a real headless browser: Debian's chromium driven by
// puppeteer-core, against `pagoda serve` on the bundled model. The page loads without console
// errors; a typed message streams into the page and ends as the server's own (greedy,
// non-streamed) answer; Stop aborts the fetch and the server frees the request; the dashboard's
// plots follow a load; with --api-key the page asks for the key once, sends it as Bearer and the
// server never logs it.
// PAGODA_WEBUI_SCREENSHOTS=DIR also writes DIR/webui-chat.png and DIR/webui-dashboard.png.
// Chromium missing is a failure (PAGODA_CHROMIUM names another binary); PAGODA_SKIP_BROWSER=1
// skips, except under CI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, skipReason, metrics, metric, waitMetric, sleep } from './harness.mjs';

function browserSkip() {
  const base = skipReason();
  if (base) return base;
  if (process.env.PAGODA_SKIP_BROWSER === '1' && !process.env.CI) return 'PAGODA_SKIP_BROWSER=1';
  return false;
}

function chromiumPath() {
  const candidates = [process.env.PAGODA_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const found = candidates.find((p) => p && fs.existsSync(p));
  if (!found) {
    throw new Error('chromium not found: install it (scripts/install-deps.sh test) or set PAGODA_CHROMIUM');
  }
  return found;
}

const skip = browserSkip();
const SHOTS = process.env.PAGODA_WEBUI_SCREENSHOTS;
const KEY = 'webui-test-key-7f3a9c';
let server;
let browser;
let page;
const consoleErrors = [];

async function launch() {
  const { default: puppeteer } = await import('puppeteer-core');
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
}

function watchConsole(p, sink) {
  p.on('console', (m) => {
    if (m.type() === 'error') sink.push(`console: ${m.text()}`);
  });
  p.on('pageerror', (e) => sink.push(`pageerror: ${e.message}`));
}

before(async () => {
  if (skip) return;
  server = await startServer();
  browser = await launch();
  page = await browser.newPage();
  await page.setViewport({ width: 1180, height: 760 });
  watchConsole(page, consoleErrors);
});

after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

// Sets an input's value as a user would (clears it, types, fires change).
async function setField(p, selector, value) {
  await p.$eval(selector, (el) => {
    el.value = '';
  });
  if (value !== '') await p.type(selector, value);
  await p.$eval(selector, (el) => el.dispatchEvent(new Event('change')));
}

const lastReply = (p) =>
  p.$$eval('#messages .msg.assistant', (els) => {
    const el = els.at(-1);
    return el
      ? { text: el.querySelector('.text').textContent, streaming: el.classList.contains('streaming'), note: el.querySelector('.note')?.textContent ?? '' }
      : null;
  });

test('GET / loads the page and its assets without console errors', { skip }, async () => {
  const response = await page.goto(`${server.url}/`, { waitUntil: 'networkidle0' });
  assert.equal(response.status(), 200);
  assert.match(response.headers()['content-type'], /^text\/html/);
  assert.ok(response.headers().etag);
  assert.match(response.headers()['content-security-policy'], /default-src 'none'/);
  assert.equal(await page.title(), 'pagoda');
  // The model picker is filled from /v1/models.
  await page.waitForFunction(() => document.querySelectorAll('#model option').length > 0);
  const models = (await (await fetch(`${server.url}/v1/models`)).json()).data.map((m) => m.id);
  assert.deepEqual(await page.$$eval('#model option', (os) => os.map((o) => o.value)), models);
  // Revalidation: the same ETag answers 304 with no body.
  const again = await fetch(`${server.url}/app.mjs`, { headers: { 'If-None-Match': (await fetch(`${server.url}/app.mjs`)).headers.get('etag') } });
  assert.equal(again.status, 304);
  assert.deepEqual(consoleErrors, []);
});

test('a typed message streams into the page and equals the server answer', { skip }, async () => {
  await setField(page, '#system', 'You are a storyteller.');
  await setField(page, '#temperature', '0');
  await setField(page, '#max-tokens', '40');
  // Count the reply's text updates while it streams.
  await page.evaluate(() => {
    window.__updates = new Set();
    new MutationObserver(() => {
      const el = [...document.querySelectorAll('#messages .msg.assistant.streaming .text')].at(-1);
      if (el && el.textContent) window.__updates.add(el.textContent.length);
    }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
  });
  const before = await page.evaluate(() => window.pagoda.chat.numStreamed);
  await page.type('#prompt', 'Once upon a time');
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => window.pagoda.chat.numStreamed > n, { timeout: 120000 }, before);
  const reply = await lastReply(page);
  assert.equal(reply.note, '');
  const updates = await page.evaluate(() => window.__updates.size);
  assert.ok(updates >= 2, `the reply arrived in ${updates} update(s), not streamed`);
  // The server's own greedy answer to the same conversation, not streamed.
  const r = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      model: await page.$eval('#model', (s) => s.value),
      messages: [{ role: 'system', content: 'You are a storyteller.' }, { role: 'user', content: 'Once upon a time' }],
      temperature: 0,
      top_p: 1,
      max_tokens: 40,
    }),
  });
  const expected = (await r.json()).choices[0].message.content;
  assert.equal(reply.text, expected);
  // Kept in localStorage: a reload shows the same conversation.
  await page.reload({ waitUntil: 'networkidle0' });
  const texts = await page.$$eval('#messages .msg .text', (els) => els.map((e) => e.textContent));
  assert.deepEqual(texts, ['Once upon a time', expected]);
  assert.equal(await page.$eval('#system', (e) => e.value), 'You are a storyteller.');
  if (SHOTS) {
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'webui-chat.png') });
  }
  assert.deepEqual(consoleErrors, []);
});

test('Stop aborts the stream and the server frees the request', { skip }, async () => {
  await setField(page, '#temperature', '0.8');
  await setField(page, '#max-tokens', '400');
  await setField(page, '#extra', '{"ignore_eos": true}');
  const m0 = await metrics(server.url);
  const aborted0 = metric(m0, 'pagoda:requests_aborted_total', { cause: 'client_disconnect' }) ?? 0;
  const generated0 = metric(m0, 'vllm:generation_tokens_total');
  const before = await page.evaluate(() => window.pagoda.chat.numStreamed);
  await page.type('#prompt', 'Tell me a long story');
  await page.click('#send');
  // Some text has arrived and the request is running.
  await page.waitForFunction(() => {
    const el = [...document.querySelectorAll('#messages .msg.assistant.streaming .text')].at(-1);
    return el && el.textContent.length > 0;
  }, { timeout: 120000 });
  assert.equal(await waitMetric(server.url, 'vllm:num_requests_running', (v) => v === 1, 5000), 1);
  assert.equal(await page.$eval('#stop', (b) => b.disabled), false);
  await page.click('#stop');
  await page.waitForFunction((n) => window.pagoda.chat.numStreamed > n, { timeout: 10000 }, before);
  const reply = await lastReply(page);
  assert.equal(reply.note, 'Stopped.');
  assert.ok(reply.text.length > 0);
  // The server noticed the closed connection, aborted the request and freed it.
  assert.equal(await waitMetric(server.url, 'vllm:num_requests_running', (v) => v === 0, 5000), 0);
  assert.equal(await waitMetric(server.url, 'vllm:kv_cache_usage_perc', (v) => v === 0, 5000), 0);
  const aborted = await waitMetric(server.url, 'pagoda:requests_aborted_total', (v) => v === aborted0 + 1, 5000, { cause: 'client_disconnect' });
  assert.equal(aborted, aborted0 + 1);
  // No more tokens are generated for it, far fewer than the 400 asked for.
  const g1 = metric(await metrics(server.url), 'vllm:generation_tokens_total');
  await sleep(1000);
  const g2 = metric(await metrics(server.url), 'vllm:generation_tokens_total');
  assert.equal(g2, g1, 'tokens are still being generated after Stop');
  assert.ok(g2 - generated0 < 400, `${g2 - generated0} tokens generated`);
  assert.equal(await page.$eval('#send', (b) => b.disabled), false);
  await setField(page, '#extra', '');
  assert.deepEqual(consoleErrors, []);
});

test('an unknown field in the extra-fields box shows the server\'s 400 naming it', { skip }, async () => {
  await setField(page, '#max-tokens', '8');
  await setField(page, '#extra', '{"not_a_field": 1}');
  const before = await page.evaluate(() => window.pagoda.chat.numStreamed);
  await page.type('#prompt', 'Hello');
  await page.click('#send');
  await page.waitForFunction((n) => window.pagoda.chat.numStreamed > n, { timeout: 30000 }, before);
  const reply = await lastReply(page);
  assert.match(reply.note, /^Error: 400: .*not_a_field/);
  assert.equal(reply.text, '');
  await setField(page, '#extra', '');
  // Chromium logs the failed fetch itself ("status of 400"); nothing else may be logged.
  const others = consoleErrors.filter((e) => !/status of 400/.test(e));
  assert.deepEqual(others, []);
  consoleErrors.length = 0;
});

test('the dashboard plots follow a load', { skip }, async () => {
  await page.click('#tab-dashboard');
  const shown = (id) => page.$eval(id, (v) => getComputedStyle(v).display !== 'none');
  assert.equal(await shown('#dashboard-view'), true);
  assert.equal(await shown('#chat-view'), false);
  const model = await page.$eval('#model', (s) => s.value);
  const canvases = () => page.$$eval('#dashboard-view canvas', (cs) => cs.map((c) => c.toDataURL()));
  const generatedBefore = metric(await metrics(server.url), 'vllm:generation_tokens_total');
  // Load: 3 clients, each sending requests that share a long system prompt (prefix-cache hits).
  const system = 'You are a storyteller who tells short stories about animals in a forest. '.repeat(6);
  let running = true;
  const client = async (i) => {
    for (let k = 0; running; k++) {
      await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'system', content: system }, { role: 'user', content: `Story ${i}.${k}` }], max_tokens: 12, ignore_eos: true }),
      }).then((r) => r.text());
    }
  };
  const load = [0, 1, 2].map(client);
  try {
    const seen = await page.waitForFunction(() => {
      const ps = window.pagoda.dashboard.points;
      const any = (f) => ps.some(f);
      return any((p) => p.generationPerSec > 0) && any((p) => p.running >= 1) && any((p) => p.kvPercent > 0) &&
        any((p) => p.ttft[0] > 0) && any((p) => p.tpot[0] > 0) && any((p) => p.prefixHitPercent > 0);
    }, { timeout: 120000, polling: 500 });
    assert.ok(await seen.jsonValue());
    const first = await canvases();
    await page.waitForFunction((n) => window.pagoda.dashboard.numScrapes > n + 2, { timeout: 20000 },
      await page.evaluate(() => window.pagoda.dashboard.numScrapes));
    const second = await canvases();
    for (let i = 0; i < first.length; i++) assert.notEqual(first[i], second[i], `plot ${i} did not change`);
    if (SHOTS) {
      await sleep(40000); // a longer stretch of load in the picture
      await page.setViewport({ width: 1180, height: 860 }); // all six plots
      await page.screenshot({ path: path.join(SHOTS, 'webui-dashboard.png') });
      await page.setViewport({ width: 1180, height: 760 });
    }
  } finally {
    running = false;
    await Promise.all(load);
  }
  // The page's counters are the server's: between the value before the load and the value now.
  const last = await page.evaluate(() => window.pagoda.dashboard.samples.at(-1).generation);
  const now = metric(await metrics(server.url), 'vllm:generation_tokens_total');
  assert.ok(last > generatedBefore && last <= now, `${generatedBefore} < ${last} <= ${now}`);
  assert.deepEqual(consoleErrors, []);
});

test('with --api-key the page asks for the key once and sends it as Bearer', { skip }, async () => {
  const keyed = await startServer(['--api-key', KEY]);
  const context = await browser.createBrowserContext();
  try {
    const p = await context.newPage();
    const errors = [];
    watchConsole(p, errors);
    const auth = [];
    p.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/v1/')) auth.push(r.headers().authorization ?? '');
    });
    await p.goto(`${keyed.url}/`, { waitUntil: 'networkidle0' });
    // The page itself is public; the API answered 401 and the page asks for the key.
    await p.waitForSelector('#key-dialog[open]');
    assert.ok(errors.every((e) => e.includes('401')), errors.join('\n'));
    errors.length = 0;
    await p.type('#key-input', KEY);
    await p.click('#key-save');
    await p.waitForFunction(() => document.querySelectorAll('#model option').length > 0);
    await setField(p, '#max-tokens', '8');
    await p.type('#prompt', 'Hello');
    await p.keyboard.press('Enter');
    await p.waitForFunction(() => window.pagoda.chat.numStreamed > 0, { timeout: 120000 });
    assert.equal(await p.$eval('#messages .msg.assistant .note', (e) => e.textContent).catch(() => ''), '');
    assert.ok((await lastReply(p)).text.length > 0);
    // Entered once: after a reload no dialog, and the models load with the stored key.
    await p.reload({ waitUntil: 'networkidle0' });
    await p.waitForFunction(() => document.querySelectorAll('#model option').length > 0);
    assert.equal(await p.$eval('#key-dialog', (d) => d.open), false);
    const sent = auth.filter((a) => a !== '');
    assert.ok(sent.length >= 3 && sent.every((a) => a === `Bearer ${KEY}`), JSON.stringify(auth));
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    assert.equal((await keyed.stop()).code, 0, keyed.log());
  }
  assert.ok(!keyed.log().includes(KEY), 'the server logged the API key');
});
