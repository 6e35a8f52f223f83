#!/usr/bin/env bash
# Installs the pinned test dependencies (the official `openai` and `@anthropic-ai/sdk` SDKs,
# puppeteer-core for the web page's browser test) into tests/server/node_modules
# with `npm ci`, unless the installed tree already matches package-lock.json.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f node_modules/.package-lock.json && node_modules/.package-lock.json -nt package-lock.json ]] &&
   [[ -f node_modules/openai/package.json && -f node_modules/@anthropic-ai/sdk/package.json ]] &&
   [[ -f node_modules/puppeteer-core/package.json ]]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
