// The chat view: the conversation (kept in localStorage, so a reload keeps it), the settings
// (model, system prompt, temperature, top-p, max tokens, extra request fields), and one streamed
// /v1/chat/completions request at a time, read with fetch() + ReadableStream. Stop aborts the
// fetch: the browser closes the connection and the server aborts the request and frees its KV
// blocks. Text is always inserted as text (textContent), never parsed as HTML.
import { api, errorMessage } from './api.mjs';
import { readEvents } from './sse.mjs';

const CONVERSATION_ITEM = 'pagoda.conversation';
const SETTINGS_ITEM = 'pagoda.settings';
const SETTING_IDS = ['model', 'system', 'temperature', 'top-p', 'max-tokens', 'extra'];

function load(item, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(item));
    return v ?? fallback;
  } catch {
    return fallback;
  }
}

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // Plain http on a non-local address: no Clipboard API.
  const area = document.createElement('textarea');
  area.value = text;
  document.body.append(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}

export class Chat {
  constructor(doc) {
    this.doc = doc;
    this.$ = (id) => doc.getElementById(id);
    const saved = load(CONVERSATION_ITEM, []);
    const valid = (m) => m && (m.role === 'user' || m.role === 'assistant') && typeof m.content === 'string';
    this.messages = Array.isArray(saved) ? saved.filter(valid) : [];
    this.controller = null;
    this.numStreamed = 0; // replies finished or stopped (for tests and the status line)
  }

  init() {
    const settings = load(SETTINGS_ITEM, {});
    for (const id of SETTING_IDS) {
      if (id !== 'model' && typeof settings[id] === 'string') this.$(id).value = settings[id];
      this.$(id).addEventListener('change', () => this.saveSettings());
    }
    this.savedModel = settings.model;
    this.$('composer').addEventListener('submit', (e) => {
      e.preventDefault();
      this.send();
    });
    this.$('prompt').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.send();
      }
    });
    this.$('stop').addEventListener('click', () => this.stop());
    this.$('new-chat').addEventListener('click', () => {
      if (this.controller) return;
      this.messages = [];
      this.save();
      this.render();
    });
    this.render();
  }

  async loadModels() {
    const select = this.$('model');
    const r = await api('v1/models');
    if (!r.ok) {
      this.showStatus(`Models: ${await errorMessage(r)}`);
      return false;
    }
    const { data } = await r.json();
    const current = select.value || this.savedModel;
    select.replaceChildren();
    for (const m of data ?? []) {
      const option = this.doc.createElement('option');
      option.value = m.id;
      // Servers with several models say whether each is loaded.
      option.textContent = typeof m.state === 'string' && m.state !== 'loaded' ? `${m.id} (${m.state})` : m.id;
      select.append(option);
    }
    if ([...select.options].some((o) => o.value === current)) select.value = current;
    this.showStatus('');
    return true;
  }

  saveSettings() {
    const settings = {};
    for (const id of SETTING_IDS) settings[id] = this.$(id).value;
    localStorage.setItem(SETTINGS_ITEM, JSON.stringify(settings));
  }

  save() {
    try {
      localStorage.setItem(CONVERSATION_ITEM, JSON.stringify(this.messages));
    } catch (e) {
      this.showStatus(`Not saved (${e.name}): start a new chat to free local storage`);
    }
  }

  showStatus(text) {
    this.$('chat-stats').textContent = text;
  }

  // One message element: role, text, copy button.
  messageElement(message) {
    const div = this.doc.createElement('div');
    div.className = `msg ${message.role}`;
    const text = this.doc.createElement('div');
    text.className = 'text';
    text.textContent = message.content;
    const copy = this.doc.createElement('button');
    copy.type = 'button';
    copy.className = 'copy';
    copy.textContent = 'Copy';
    copy.addEventListener('click', async () => {
      try {
        await copyText(text.textContent);
        copy.textContent = 'Copied';
      } catch {
        copy.textContent = 'Copy failed';
      }
      setTimeout(() => (copy.textContent = 'Copy'), 1500);
    });
    div.append(text, copy);
    if (message.note) {
      const note = this.doc.createElement('div');
      note.className = 'note';
      note.textContent = message.note;
      div.append(note);
    }
    return div;
  }

  render() {
    const box = this.$('messages');
    box.replaceChildren(...this.messages.map((m) => this.messageElement(m)));
    box.scrollTop = box.scrollHeight;
  }

  // The request body from the settings; an error string when a field is invalid.
  requestBody() {
    const body = {
      model: this.$('model').value,
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
    };
    const system = this.$('system').value.trim();
    if (system) body.messages.push({ role: 'system', content: system });
    for (const m of this.messages) if (m.content) body.messages.push({ role: m.role, content: m.content });
    const number = (id, name, integer) => {
      const raw = this.$(id).value.trim();
      if (raw === '') return null;
      const v = Number(raw);
      if (!Number.isFinite(v) || (integer && !Number.isInteger(v))) throw new Error(`${name} must be a number`);
      body[name] = v;
      return v;
    };
    number('temperature', 'temperature', false);
    number('top-p', 'top_p', false);
    number('max-tokens', 'max_tokens', true);
    const extra = this.$('extra').value.trim();
    if (extra) {
      let fields;
      try {
        fields = JSON.parse(extra);
      } catch (e) {
        throw new Error(`Extra request fields: ${e.message}`);
      }
      if (!fields || typeof fields !== 'object' || Array.isArray(fields)) {
        throw new Error('Extra request fields must be a JSON object');
      }
      Object.assign(body, fields);
    }
    return body;
  }

  setBusy(busy) {
    this.$('send').disabled = busy;
    this.$('stop').disabled = !busy;
    this.$('new-chat').disabled = busy;
  }

  async send() {
    if (this.controller) return;
    const prompt = this.$('prompt');
    const content = prompt.value;
    if (!content.trim()) return;
    let body;
    this.messages.push({ role: 'user', content });
    try {
      body = this.requestBody();
    } catch (e) {
      this.messages.pop();
      this.showStatus(e.message);
      return;
    }
    prompt.value = '';
    const reply = { role: 'assistant', content: '' };
    this.messages.push(reply);
    this.save();
    this.render();
    const box = this.$('messages');
    const element = box.lastElementChild;
    const text = element.querySelector('.text');
    element.classList.add('streaming');
    this.controller = new AbortController();
    this.setBusy(true);
    this.showStatus('');
    const t0 = performance.now();
    let tFirst = 0;
    let usage = null;
    let finish = '';
    try {
      const r = await api('v1/chat/completions', { method: 'POST', body, signal: this.controller.signal });
      if (!r.ok) throw new Error(await errorMessage(r));
      for await (const data of readEvents(r.body)) {
        if (data === '[DONE]') break;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message ?? 'stream error');
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices?.[0];
        const delta = choice?.delta?.content;
        if (delta) {
          if (!tFirst) tFirst = performance.now();
          reply.content += delta;
          text.textContent = reply.content;
          box.scrollTop = box.scrollHeight;
        }
        if (choice?.finish_reason) finish = choice.finish_reason;
      }
      const seconds = (performance.now() - t0) / 1000;
      if (usage) {
        const decode = tFirst ? (performance.now() - tFirst) / 1000 : 0;
        const perSec = decode > 0 && usage.completion_tokens > 1 ? (usage.completion_tokens - 1) / decode : NaN;
        this.showStatus(
          `${usage.completion_tokens} tokens in ${seconds.toFixed(2)} s` +
            (tFirst ? `, first after ${((tFirst - t0) / 1000).toFixed(2)} s` : '') +
            (Number.isFinite(perSec) ? `, ${perSec.toFixed(1)} tokens/s` : '') +
            (finish ? ` (${finish})` : ''),
        );
      }
    } catch (e) {
      if (e.name === 'AbortError') reply.note = 'Stopped.';
      else reply.note = `Error: ${e.message}`;
    } finally {
      this.controller = null;
      this.numStreamed++;
      this.save();
      this.render();
      this.setBusy(false);
    }
  }

  stop() {
    if (this.controller) this.controller.abort();
  }
}
