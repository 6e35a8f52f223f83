// deploy/prometheus and deploy/grafana, offline: promtool checks and unit-tests the alert rules,
// checks the scrape config, parses every PromQL expression (alerts, the Prometheus adapter's HPA
// rule, each dashboard panel as a generated recording rule), and every metric those expressions
// name is one that a real `pagoda serve` of the bundled model or a real `pagoda router` in front
// of it exports (or a Prometheus or Kubernetes metric listed in deploy/README.md, "Metrics"), and
// every label value the dashboard and alerts match on a router metric is one the router's code
// emits (router/router_metrics.cc), so the dashboard cannot drift from the code. Mutated copies
// show each check can fail.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import YAML from "yaml";

import { skipReason, startRouter, startServer } from "../server/js/harness.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const promDir = path.join(root, "deploy/prometheus");
const dashboardFile = path.join(root, "deploy/grafana/pagoda-dashboard.json");
const adapterFile = path.join(root, "deploy/kubernetes/prometheus-adapter/config.yaml");
const promtool = process.env.PAGODA_PROMTOOL || "promtool";

// Runs promtool; returns { ok, output }.
function runPromtool(args, cwd) {
  try {
    const output = execFileSync(promtool, args, { cwd, encoding: "utf8", stdio: "pipe" });
    return { ok: true, output };
  } catch (e) {
    return { ok: false, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

// The metric names a PromQL expression selects. String literals, label matchers, range and
// subquery brackets and grouping label lists are removed first; what is left that looks like a
// name and is not a function call or a keyword is a metric name.
const keywords = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "and",
                          "or", "unless", "bool", "offset", "inf", "nan"]);
export function metricNames(expr) {
  const stripped = expr
      .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
      .replace(/\{[^}]*\}/g, " ")
      .replace(/\[[^\]]*\]/g, " ")
      .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set();
  for (const m of stripped.matchAll(/(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2] || keywords.has(m[1].toLowerCase())) continue;
    names.add(m[1]);
  }
  return names;
}

// The metrics deploy/README.md documents outside `pagoda serve`: the router's (issue 35 part 1)
// Prometheus' `up`, and the Kubernetes ones the memory alert uses. Rows of its "Metrics" table.
function documentedMetrics() {
  const readme = fs.readFileSync(path.join(root, "deploy/README.md"), "utf8");
  const section = readme.split(/^## /m).find((s) => s.startsWith("Metrics"));
  assert.ok(section, "deploy/README.md has a Metrics section");
  const names = { router: new Set(), prometheus: new Set(), kubernetes: new Set() };
  for (const m of section.matchAll(
           /^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \| (router|prometheus|kubernetes) \|/gm)) {
    names[m[2]].add(m[1]);
  }
  assert.ok(names.router.has("pagoda_router_degradation_level"));
  return names;
}

function dashboardExpressions(dashboard) {
  const out = [];
  for (const panel of dashboard.panels) {
    for (const t of panel.targets ?? []) out.push({ where: `panel "${panel.title}"`, expr: t.expr });
  }
  for (const v of dashboard.templating.list) {
    if (v.type !== "query") continue;
    // label_values(SELECTOR, label): the selector is PromQL, the label is not a metric.
    const m = v.definition.match(/^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$/);
    assert.ok(m, `variable ${v.name}: ${v.definition}`);
    out.push({ where: `variable ${v.name}`, expr: m[1] });
  }
  return out;
}

function alertExpressions(file = path.join(promDir, "alerts.yml")) {
  const rules = YAML.parse(fs.readFileSync(file, "utf8")).groups.flatMap((g) => g.rules);
  return rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }));
}

// Grafana's interval variables in an expression, replaced by a duration promtool accepts.
const forPromtool = (expr) => expr.replace(/\$__(rate_interval|interval|range)/g, "5m");

// The metric names a Prometheus text exposition declares: every sample's name, and every
// `# TYPE` family (so a labelled family with no series yet still counts), with a histogram's or
// summary's _bucket/_sum/_count series.
export function exposedNames(text) {
  const names = new Set();
  for (const line of text.split("\n")) {
    const sample = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/);
    if (sample) names.add(sample[1]);
    const type = line.match(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/);
    if (!type) continue;
    names.add(type[1]);
    if (type[2] === "histogram" || type[2] === "summary") {
      for (const suffix of ["_bucket", "_sum", "_count"]) names.add(type[1] + suffix);
    }
  }
  return names;
}

// label -> the values router/router_metrics.cc can give it: string literals of a label pair
// (`{"unit", "entries"}`, `{"result", hit ? "hit" : "miss"}`) and the `return "..."` values of
// the *_name function a pair calls (`{"cause", cause_name(cause)}`). Labels set from runtime
// data (backend names) have no literal and are not listed.
export function routerLabelValues(source) {
  const functions = new Map();
  for (const m of source.matchAll(/const char\* (\w+_name)\([^)]*\) \{([\s\S]*?)\n\}/g)) {
    functions.set(m[1], [...m[2].matchAll(/return "([^"]*)";/g)].map((r) => r[1]).filter((v) => v !== "unknown"));
  }
  const values = new Map();
  for (const m of source.matchAll(/\{"(\w+)",\s*([^{}]*)\}/g)) {
    const call = m[2].match(/^(\w+_name)\(/);
    const found = call ? functions.get(call[1]) ?? [] : [...m[2].matchAll(/"([^"]*)"/g)].map((v) => v[1]);
    if (found.length === 0) continue;
    if (!values.has(m[1])) values.set(m[1], new Set());
    for (const v of found) values.get(m[1]).add(v);
  }
  return values;
}

// Each `label="v"` / `label=~"a|b"` matcher on a pagoda_router_* selector whose label the code
// gives literal values: the values it names that the code never emits.
function unknownRouterLabelValues(expressions, known) {
  const bad = [];
  for (const { where, expr } of expressions) {
    for (const m of expr.matchAll(/(pagoda_router_\w+)\{([^}]*)\}/g)) {
      for (const mm of m[2].matchAll(/(\w+)\s*(=~|=)\s*"([^"]*)"/g)) {
        const allowed = known.get(mm[1]);
        if (!allowed) continue;
        const wanted = mm[2] === "=" ? [mm[3]] : mm[3].split("|");
        for (const v of wanted) if (!allowed.has(v)) bad.push(`${where}: ${m[1]}{${mm[1]}="${v}"}`);
      }
    }
  }
  return bad;
}

let exported = null;        // metric names of a real `pagoda serve`
let routerExported = null;  // metric names of a real `pagoda router` in front of it
let server = null;
let router = null;
const skip = skipReason();

before(async () => {
  if (skip) return;
  server = await startServer(["--max-num-seqs", "2"]);
  // One request so that every family has samples (HTTP codes appear on first use).
  const r = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt: "Once upon a time", max_tokens: 4 }),
  });
  assert.equal(r.status, 200, await r.text());
  exported = exposedNames(await (await fetch(`${server.url}/metrics`)).text());
  // The router, with a ladder (so its families are all registered), and one request through it.
  router = await startRouter(`listen: {host: 127.0.0.1, port: 0}
backends:
  - {name: r0, url: "${server.url}", models: [demo]}
ladder:
  levels: [{queue_length: 100}]
  cache: {max_entries: 10}
`);
  const rr = await fetch(`${router.url}/v1/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ model: "demo", prompt: "Once upon a time", max_tokens: 2 }),
  });
  assert.equal(rr.status, 200, await rr.text());
  routerExported = exposedNames(await (await fetch(`${router.url}/metrics`)).text());
});
after(async () => {
  if (router) {
    router.proc.kill("SIGTERM");
    await new Promise((r) => router.proc.on("exit", r));
  }
  if (server) await server.stop();
});

// Every metric of each expression is exported or documented; returns the offenders.
function unknownMetrics(expressions, { allowExternal }) {
  const documented = documentedMetrics();
  const bad = [];
  for (const { where, expr } of expressions) {
    const names = metricNames(expr);
    if (names.size === 0) bad.push(`${where}: no metric in ${expr}`);
    for (const name of names) {
      if (exported.has(name) || routerExported.has(name)) continue;
      if (documented.prometheus.has(name)) continue;  // `up`: Prometheus' own, for any target
      if (allowExternal && documented.kubernetes.has(name)) continue;
      bad.push(`${where}: ${name}`);
    }
  }
  return bad;
}

test("metricNames finds the selected metrics only", () => {
  assert.deepEqual([...metricNames(
      'histogram_quantile(0.95, sum by (namespace, le) (rate(vllm:ttft_bucket{job="a",le=~"x"}[$__rate_interval])))')],
      ["vllm:ttft_bucket"]);
  assert.deepEqual([...metricNames(
      'sum(a_total or rate(b:c[5m])) / on (pod) group_left (x) up == bool 1 unless max(d offset 5m)')],
      ["a_total", "b:c", "up", "d"]);
});

test("promtool: the alert rules are valid and their unit tests pass", () => {
  const check = runPromtool(["check", "rules", "alerts.yml"], promDir);
  assert.ok(check.ok, check.output);
  assert.match(check.output, /SUCCESS: 10 rules found/);
  const unit = runPromtool(["test", "rules", "alerts.test.yml"], promDir);
  assert.ok(unit.ok, unit.output);
  assert.match(unit.output, /SUCCESS/);
  // Every alert has a unit test.
  const tested = new Set([...fs.readFileSync(path.join(promDir, "alerts.test.yml"), "utf8")
                              .matchAll(/alertname: (\w+)/g)].map((m) => m[1]));
  for (const { where } of alertExpressions()) {
    assert.ok(tested.has(where.replace("alert ", "")), `${where} has no promtool unit test`);
  }
});

test("promtool: a mutated threshold fails the alert unit tests", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pagoda-prom-"));
  try {
    // 2% instead of 5%: the "good" namespace (3% errors) fires where the test expects silence.
    const rules = fs.readFileSync(path.join(promDir, "alerts.yml"), "utf8");
    const mutated = rules.replace(/^(\s*)> 0\.05$/m, "$1> 0.02");
    assert.notEqual(mutated, rules);
    fs.writeFileSync(path.join(dir, "alerts.yml"), mutated);
    fs.copyFileSync(path.join(promDir, "alerts.test.yml"), path.join(dir, "alerts.test.yml"));
    const unit = runPromtool(["test", "rules", "alerts.test.yml"], dir);
    assert.ok(!unit.ok, unit.output);
    assert.match(unit.output, /PagodaHighErrorRate[\s\S]*namespace="good"/);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test("promtool: the scrape config is valid (Kubernetes discovery swapped for static)", () => {
  const text = fs.readFileSync(path.join(promDir, "prometheus.yml"), "utf8");
  const config = YAML.parse(text);
  const jobs = config.scrape_configs.map((j) => j.job_name);
  assert.deepEqual(jobs, ["pagoda-serve", "pagoda-router"]);
  for (const j of config.scrape_configs) assert.ok(j.kubernetes_sd_configs, j.job_name);
  // Every job an alert selects is scraped.
  for (const { where, expr } of alertExpressions()) {
    for (const m of expr.matchAll(/job="([^"]+)"/g)) assert.ok(jobs.includes(m[1]), where);
  }
  // Debian's promtool is built without Kubernetes service discovery: check everything else
  // (relabelling regexes, rule files) on a copy whose discovery is a static target.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pagoda-prom-"));
  try {
    for (const j of config.scrape_configs) {
      delete j.kubernetes_sd_configs;
      j.static_configs = [{ targets: ["127.0.0.1:8000"] }];
    }
    fs.writeFileSync(path.join(dir, "prometheus.yml"), YAML.stringify(config));
    fs.copyFileSync(path.join(promDir, "alerts.yml"), path.join(dir, "alerts.yml"));
    const check = runPromtool(["check", "config", "prometheus.yml"], dir);
    assert.ok(check.ok, check.output);
    config.scrape_configs[0].relabel_configs[0].regex = "pagoda;(serve";
    fs.writeFileSync(path.join(dir, "prometheus.yml"), YAML.stringify(config));
    assert.ok(!runPromtool(["check", "config", "prometheus.yml"], dir).ok, "bad regex passes");
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test("the dashboard is valid JSON with the panels the issue asks for", () => {
  const dashboard = JSON.parse(fs.readFileSync(dashboardFile, "utf8"));
  assert.equal(typeof dashboard.uid, "string");
  const ids = new Set();
  for (const p of dashboard.panels) {
    assert.ok(!ids.has(p.id), `duplicate panel id ${p.id}`);
    ids.add(p.id);
    for (const k of ["x", "y", "w", "h"]) assert.equal(typeof p.gridPos?.[k], "number", p.title);
    if (p.type === "row") continue;
    assert.ok(p.targets.length > 0, `panel "${p.title}" has no query`);
    for (const t of p.targets) assert.ok(t.expr && t.refId, `panel "${p.title}"`);
    assert.equal(p.datasource.uid, "${datasource}", `panel "${p.title}" uses the variable`);
  }
  // Each topic of the list is on some panel, through the series that measure it.
  const used = new Set(dashboardExpressions(dashboard).flatMap(({ expr }) => [...metricNames(expr)]));
  for (const name of [
    "vllm:request_success_total",                      // QPS
    "pagoda:requests_rejected_total",                  // error rate (with the above)
    "vllm:time_to_first_token_seconds_bucket",         // TTFT percentiles
    "vllm:inter_token_latency_seconds_bucket",         // TPOT percentiles
    "vllm:e2e_request_latency_seconds_bucket",         // E2E percentiles
    "vllm:generation_tokens_total",                    // tokens/s
    "vllm:kv_cache_usage_perc",                        // KV usage
    "vllm:num_requests_waiting",                       // queue
    "vllm:prefix_cache_hits_total",                    // prefix-cache hit rate
    "vllm:prefix_cache_queries_total",
    "vllm:num_preemptions_total",                      // preemptions
    "pagoda_router_degradation_level",                 // degradation level
    "pagoda_router_degradation_changes_total",         // level changes
    "pagoda_router_ladder_actions_total",              // ladder actions (clamp, reroute, cache, preset)
    "pagoda_router_errors_total",                      // token-bucket / queue / circuit refusals
    "pagoda_router_cache_lookups_total",               // response-cache hits
    "pagoda_router_backend_up",                        // per-backend health
    "pagoda_router_backend_outstanding_requests",      // per-backend outstanding
    "pagoda_router_requests_total",                    // router request outcomes
    "pagoda:engine_ready", "up",                       // per-replica health
  ]) {
    assert.ok(used.has(name), `no panel uses ${name}`);
  }
});

test("every expression names only metrics pagoda serve or pagoda router export (or documented ones)",
     { skip }, () => {
  assert.ok(exported.has("vllm:num_requests_waiting"), [...exported].join(" "));
  assert.ok(routerExported.has("pagoda_router_degradation_level"), [...routerExported].join(" "));
  // The README's router rows are real too (the table cannot drift either).
  for (const name of documentedMetrics().router) assert.ok(routerExported.has(name), `${name} (deploy/README.md)`);
  const dashboard = JSON.parse(fs.readFileSync(dashboardFile, "utf8"));
  const adapter = YAML.parse(fs.readFileSync(adapterFile, "utf8"));
  const adapterExprs = adapter.rules.map((r) => ({ where: "adapter rule", expr: r.seriesQuery }));
  // The dashboard needs nothing from Kubernetes; the memory alert does (cAdvisor,
  // kube-state-metrics).
  assert.deepEqual(unknownMetrics(dashboardExpressions(dashboard), { allowExternal: false }), []);
  assert.deepEqual(unknownMetrics([...alertExpressions(), ...adapterExprs], { allowExternal: true }),
                   []);
  // A typo'd metric name is caught.
  const typo = [{ where: "mutated", expr: "sum(rate(vllm:request_sucess_total[5m]))" },
                { where: "mutated", expr: "max(pagoda_router_degradation_levels)" }];
  assert.deepEqual(unknownMetrics(typo, { allowExternal: true }),
                   ["mutated: vllm:request_sucess_total", "mutated: pagoda_router_degradation_levels"]);
});

test("every router label value the dashboard and alerts match on is one the router emits", () => {
  const known = routerLabelValues(fs.readFileSync(path.join(root, "router/router_metrics.cc"), "utf8"));
  // The extraction finds the router's label sets (a few spot checks of each kind of source).
  assert.ok(known.get("cause")?.has("rate_limited") && known.get("cause").has("circuit_open"));
  assert.ok(known.get("action")?.has("preset_reply"));
  assert.deepEqual([...known.get("result") ?? []].sort(), ["hit", "miss"]);
  assert.deepEqual([...known.get("direction") ?? []].sort(), ["down", "up"]);
  assert.deepEqual([...known.get("unit") ?? []].sort(), ["bytes", "entries"]);
  const dashboard = JSON.parse(fs.readFileSync(dashboardFile, "utf8"));
  assert.deepEqual(unknownRouterLabelValues([...dashboardExpressions(dashboard), ...alertExpressions()], known), []);
  // A typo'd value is caught, in = and =~ matchers.
  const typo = [{ where: "mutated", expr: 'sum(rate(pagoda_router_errors_total{cause=~"rate_limited|circuit_opened"}[5m]))' },
                { where: "mutated", expr: 'rate(pagoda_router_ladder_actions_total{action="preset"}[5m])' }];
  assert.deepEqual(unknownRouterLabelValues(typo, known),
                   ['mutated: pagoda_router_errors_total{cause="circuit_opened"}',
                    'mutated: pagoda_router_ladder_actions_total{action="preset"}']);
});

test("promtool parses every dashboard expression (as recording rules)", () => {
  const dashboard = JSON.parse(fs.readFileSync(dashboardFile, "utf8"));
  const expressions = dashboardExpressions(dashboard);
  const rulesFor = (list) => YAML.stringify({
    groups: [{
      name: "dashboard",
      rules: list.map(({ expr }, i) => ({ record: `dashboard:expr_${i}`, expr: forPromtool(expr) })),
    }],
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pagoda-dash-"));
  try {
    fs.writeFileSync(path.join(dir, "rules.yml"), rulesFor(expressions));
    const check = runPromtool(["check", "rules", "rules.yml"], dir);
    assert.ok(check.ok, check.output);
    assert.match(check.output, new RegExp(`SUCCESS: ${expressions.length} rules found`));
    // A broken expression fails.
    const broken = [...expressions, { expr: "sum(rate(vllm:num_requests_waiting[5m])" }];
    fs.writeFileSync(path.join(dir, "rules.yml"), rulesFor(broken));
    assert.ok(!runPromtool(["check", "rules", "rules.yml"], dir).ok);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});
