// The page's calls to the server: every request carries the API key the user entered (kept in
// this browser's localStorage, sent as Authorization: Bearer); a 401 asks for the key again.
const KEY_ITEM = 'pagoda.apiKey';

export function apiKey() {
  return localStorage.getItem(KEY_ITEM) ?? '';
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_ITEM, key);
  else localStorage.removeItem(KEY_ITEM);
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

// fetch() with the key; JSON bodies are sent as application/json (the server takes nothing else).
// Paths are relative ("v1/models"), so the page also works behind a proxy that adds a prefix.
export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = {};
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: 'no-store',
  });
  if (response.status === 401) onUnauthorized();
  return response;
}

// The message of an error response (OpenAI's {"error": {"message"}} or plain text).
export async function errorMessage(response) {
  const text = await response.text();
  try {
    const j = JSON.parse(text);
    if (j?.error?.message) return `${response.status}: ${j.error.message}`;
  } catch {}
  return `${response.status}: ${text.slice(0, 300) || response.statusText}`;
}
