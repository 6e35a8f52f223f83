// Prefix affinity vs round robin through `pagoda router` on 3 replicas: 4 tenants with distinct
// long system prompts, 3 requests each, interleaved. The cluster prefix-cache hit rate is read
// from the replicas' own vllm:prefix_cache_{hits,queries}_total. Round robin (affinity off)
// first; then SIGHUP switches affinity on and a second set of tenants (distinct prompts, so the
// first phase's cache cannot help) runs the same way. Expected from the schedule alone: strict
// round robin sends a tenant's 3 requests to 3 replicas (none can hit), affinity to 1 (2 of 3);
// the router without affinity is least-outstanding with scraped load, close to round robin. The
// test asks for at least 2x.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, skipReason, startServer, waitHealthy, metrics, sleep } from './harness.mjs';

const skip = skipReason();
const replicas = [];
let router;
let configPath;

function sumMetric(values, name) {
  let s = 0;
  for (const [k, v] of values) if (k === name || k.startsWith(`${name}{`)) s += v;
  return s;
}

async function clusterPrefixCounts() {
  let hits = 0;
  let queries = 0;
  for (const r of replicas) {
    const m = await metrics(r.url);
    hits += sumMetric(m, 'vllm:prefix_cache_hits_total');
    queries += sumMetric(m, 'vllm:prefix_cache_queries_total');
  }
  return { hits, queries };
}

function systemPrompt(tenant) {
  const words = [];
  for (let i = 0; i < 22; ++i) words.push(`Rule ${i} of ${tenant}: answer briefly.`);
  return words.join(' ');
}

async function runPhase(tenants) {
  const before = await clusterPrefixCounts();
  for (let round = 0; round < 3; ++round) {
    for (const t of tenants) {
      const r = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'demo', max_tokens: 2, temperature: 0,
          messages: [{ role: 'system', content: systemPrompt(t) },
                     { role: 'user', content: `Question ${round}` }],
        }),
      });
      const body = await r.json();
      assert.equal(r.status, 200, JSON.stringify(body));
      assert.ok(body.usage.prompt_tokens < 480, `prompt too long: ${body.usage.prompt_tokens}`);
    }
  }
  const afterCounts = await clusterPrefixCounts();
  const queries = afterCounts.queries - before.queries;
  assert.ok(queries > 0, 'the replicas report prefix-cache queries');
  return (afterCounts.hits - before.hits) / queries;
}

function config(affinity) {
  return `listen: {host: 127.0.0.1, port: 0}
backends:
${replicas.map((s, i) => `  - {name: r${i}, url: "${s.url}", models: [demo]}`).join('\n')}
health: {interval_ms: 200}
balancing: {prefix_affinity: ${affinity}}
`;
}

before(async () => {
  if (skip) return;
  for (let i = 0; i < 3; ++i) replicas.push(await startServer([], { threads: 1 }));
  configPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-router-')), 'router.yaml');
  fs.writeFileSync(configPath, config(false));
  const proc = spawn(BIN, ['router', '--config', configPath, '--threads', '1'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on port (\d+)/);
      if (m) resolve(`http://127.0.0.1:${m[1]}`);
    });
    proc.on('exit', (code) => reject(new Error(`router exited (${code})`)));
  });
  router = { proc, url };
  await waitHealthy(url, 10000);
});

after(async () => {
  for (const s of replicas) await s.stop('SIGKILL');
  if (router) {
    router.proc.kill('SIGTERM');
    await new Promise((r) => router.proc.on('exit', r));
  }
});

test('prefix affinity at least doubles the cluster prefix-cache hit rate of round robin', { skip }, async () => {
  const roundRobin = await runPhase(['alpha', 'bravo', 'charlie', 'delta']);
  fs.writeFileSync(configPath, config(true));
  router.proc.kill('SIGHUP');
  await sleep(300);  // the reload is synchronous on the signal; give the signal time to land
  const affinity = await runPhase(['echo', 'foxtrot', 'golf', 'hotel']);
  console.log(`cluster prefix-cache hit rate: round robin ${roundRobin.toFixed(3)}, affinity ${affinity.toFixed(3)}`);
  assert.ok(affinity >= 2 * roundRobin, `affinity ${affinity} vs round robin ${roundRobin}`);
});
