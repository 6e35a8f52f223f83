// The page's entry point: the API-key dialog, the Chat / Dashboard tabs, the server status line.
// window.pagoda exposes the chat and dashboard objects (the browser test reads their state).
import { setApiKey, setUnauthorizedHandler } from './api.mjs';
import { Chat } from './chat.mjs';
import { Dashboard } from './dashboard.mjs';

const $ = (id) => document.getElementById(id);

const chat = new Chat(document);
const dashboard = new Dashboard(document);
window.pagoda = { chat, dashboard };

function askForKey() {
  const dialog = $('key-dialog');
  if (dialog.open) return;
  $('key-input').value = '';
  dialog.showModal();
  $('key-input').focus();
}

function showTab(name) {
  $('chat-view').hidden = name !== 'chat';
  $('dashboard-view').hidden = name !== 'dashboard';
  $('tab-chat').classList.toggle('active', name === 'chat');
  $('tab-dashboard').classList.toggle('active', name === 'dashboard');
  if (name === 'dashboard') dashboard.draw();
  location.hash = name === 'dashboard' ? '#dashboard' : '';
}

async function refreshStatus() {
  try {
    const r = await fetch('health', { cache: 'no-store' });
    $('status').textContent = r.ok ? 'ready' : r.status === 503 ? 'loading' : `health ${r.status}`;
    $('status').className = `status ${r.ok ? 'ok' : 'bad'}`;
  } catch {
    $('status').textContent = 'offline';
    $('status').className = 'status bad';
  }
}

async function main() {
  let unauthorized = false;
  setUnauthorizedHandler(() => {
    unauthorized = true;
    askForKey();
  });
  $('key-button').addEventListener('click', askForKey);
  $('key-form').addEventListener('submit', () => {
    setApiKey($('key-input').value.trim());
    $('key-input').value = '';
    unauthorized = false;
    chat.loadModels();
  });
  $('key-clear').addEventListener('click', () => {
    setApiKey('');
    $('key-dialog').close();
  });
  $('tab-chat').addEventListener('click', () => showTab('chat'));
  $('tab-dashboard').addEventListener('click', () => showTab('dashboard'));
  chat.init();
  showTab(location.hash === '#dashboard' ? 'dashboard' : 'chat');
  await refreshStatus();
  setInterval(refreshStatus, 5000);
  // While the model loads (503), try again; a 401 waits for the key instead.
  const loadModels = async () => {
    if (await chat.loadModels()) return;
    if (!unauthorized) setTimeout(loadModels, 2000);
  };
  await loadModels();
  dashboard.start();
}

main();
