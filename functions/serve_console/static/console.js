// Chat History Console (CON-1..CON-7). Plain JavaScript, no build step, no third-party code.
// Every request goes to the origin that served this page (relative URLs); the page's
// Content-Security-Policy (connect-src 'self') refuses any other.
"use strict";

const $ = (id) => document.getElementById(id);
const SESSION_KEY = "chat-console-identity";

// ------------------------------------------------------------------ small helpers

/** An element with attributes and children; text goes in as text, never as HTML. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    // Styles through the CSSOM: the Content-Security-Policy refuses inline style attributes.
    else if (name === "style") Object.assign(node.style, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const fmt = new Intl.NumberFormat("en-US");
const num = (n) => (n === null || n === undefined ? "–" : fmt.format(n));

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

function showAlert(message) {
  const box = $("alert");
  box.textContent = message;
  box.hidden = !message;
}

function progress(text) {
  $("progress").textContent = text || "";
}

class ApiError extends Error {
  constructor(status, body, text) {
    const info = body && body.error ? body.error : null;
    // The service's error shape, or API Gateway's own (`{"message": "Unauthorized"}` from the authorizer).
    const message = info
      ? `${info.message} (${info.code || status})`
      : body && body.message
        ? `${body.message} (${status})`
        : `HTTP ${status}: ${text || "no body"}`;
    super(message);
    this.status = status;
    this.body = body;
  }
}

// ------------------------------------------------------------------ identity and requests

const state = {
  identity: null, // {user} in dev mode, {token, sub} with a JWT
  conversations: { items: [], cursor: null, done: false, loading: false, query: "", generation: 0 },
  current: null, // the open conversation (GET /conversations/{id})
  messages: [],
  tree: new Map(), // message_id -> tree node (children, active, parent_id)
  view: "chat",
  inspecting: false,
  outbox: { busy: false, queue: [], generation: 0 }, // messages on their way (CON-7)
  dataJobs: 0, // bumped on sign-out: a job's polling for the previous user stops
  world: null,
};

function authHeaders() {
  const id = state.identity;
  if (!id) return {};
  return id.token ? { Authorization: `Bearer ${id.token}` } : { "X-User-Id": id.user };
}

async function request(method, path, body, extraHeaders = {}) {
  const headers = { ...authHeaders(), ...extraHeaders };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** JSON in, JSON out (see answerOf). */
async function api(method, path, body) {
  return answerOf(await request(method, path, body));
}

/** An answer's JSON body; an error answer becomes an ApiError (and a 401 signs out). */
async function answerOf(res) {
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (res.status === 401) {
    signOut("Your sign-in was refused (401). Sign in again.");
    throw new ApiError(res.status, data, text);
  }
  // A failed model call still answers the stored turn (502 with both messages): show it, not throw.
  if (!res.ok && !(data && data.assistant_message)) throw new ApiError(res.status, data, text);
  return data;
}

function jwtSubject(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)).sub || "JWT user";
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------ sign-in (CON-2)

function restoreIdentity() {
  try {
    return JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null");
  } catch {
    return null;
  }
}

async function signIn(event) {
  event.preventDefault();
  const user = $("signin-user").value.trim();
  const token = $("signin-token").value.trim();
  if (!user && !token) {
    showAlert("Give a user id (local server) or a JWT.");
    return;
  }
  if (token && !jwtSubject(token)) {
    showAlert("That token is not a JWT (three base64url parts).");
    return;
  }
  state.identity = token ? { token, sub: jwtSubject(token) } : { user };
  try {
    await api("GET", "/conversations?limit=1");
  } catch (err) {
    state.identity = null;
    showAlert(`Sign-in failed: ${err.message}`);
    return;
  }
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(state.identity));
  enter();
}

function signOut(message) {
  clearOutbox(); // nothing of this user's is sent, or shown, under the next one
  state.identity = null;
  sessionStorage.removeItem(SESSION_KEY);
  state.current = null;
  state.messages = [];
  state.world = null;
  resetData();
  $("signin").hidden = false;
  $("views").hidden = true;
  $("who").hidden = true;
  for (const view of document.querySelectorAll(".view")) view.hidden = true;
  $("signin-user").value = "";
  $("signin-token").value = "";
  showAlert(message || "");
  $("signin-user").focus();
}

function enter() {
  showAlert("");
  $("signin").hidden = true;
  $("views").hidden = false;
  $("who").hidden = false;
  $("who-name").textContent = state.identity.user || state.identity.sub;
  closeConversation();
  $("conv-search").value = "";
  showView("chat");
  reloadConversations();
}

// ------------------------------------------------------------------ views

function showView(name) {
  state.view = name;
  for (const button of document.querySelectorAll("#views button")) {
    if (button.dataset.view === name) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  for (const view of ["chat", "turns", "usage", "worlds", "data"]) $(`view-${view}`).hidden = view !== name;
  if (name === "turns") loadTurns().catch(fail);
  if (name === "usage") loadUsage().catch(fail);
  if (name === "worlds") loadWorlds().catch(fail);
  if (name === "data") showData();
}

function fail(err) {
  showAlert(err && err.message ? err.message : String(err));
}

// ------------------------------------------------------------------ conversations (CON-3)

function reloadConversations() {
  const list = state.conversations;
  list.generation += 1;
  Object.assign(list, { items: [], cursor: null, done: false, loading: false, query: $("conv-search").value.trim() });
  $("conv-list").replaceChildren();
  $("conv-empty").hidden = true;
  return loadMoreConversations();
}

async function loadMoreConversations() {
  const list = state.conversations;
  if (!state.identity || list.loading || list.done) return;
  list.loading = true;
  const generation = list.generation;
  $("conv-more").textContent = "Loading…";
  try {
    const params = new URLSearchParams({ limit: "20" });
    if (list.cursor) params.set("cursor", list.cursor);
    if (list.query) params.set("q", list.query);
    const page = await api("GET", `/conversations?${params}`);
    if (generation !== list.generation) return;
    list.items.push(...page.items);
    list.cursor = page.next_cursor;
    list.done = !page.next_cursor;
    for (const conversation of page.items) $("conv-list").append(conversationRow(conversation));
    $("conv-empty").hidden = list.items.length > 0 || !list.done;
    $("conv-empty").textContent = list.query ? "No conversation has that in its title." : "No conversations yet.";
  } catch (err) {
    fail(err);
  } finally {
    if (generation === list.generation) {
      list.loading = false;
      $("conv-more").textContent = list.done ? "" : "Scroll for more";
      if (!list.done && sentinelVisible()) loadMoreConversations();
    }
  }
}

function sentinelVisible() {
  const box = $("conv-more").getBoundingClientRect();
  return box.top < window.innerHeight && box.bottom >= 0 && !$("view-chat").hidden;
}

function conversationRow(conversation) {
  const current = state.current && state.current.conversation_id === conversation.conversation_id;
  return el(
    "li",
    { "data-id": conversation.conversation_id },
    el(
      "button",
      {
        type: "button",
        class: "open",
        title: conversation.title || "(untitled)",
        "aria-current": current ? "true" : "false",
        onclick: () => {
          showAlert("");
          openConversation(conversation.conversation_id).catch(fail);
        },
      },
      conversation.title || "(untitled)",
      el("small", { text: `${num(conversation.message_count)} messages · ${when(conversation.updated_at)}` }),
    ),
  );
}

function toggleNewForm(open) {
  $("new-form").hidden = !open;
  if (open) $("new-title").focus();
}

async function createConversation(event) {
  event.preventDefault();
  const body = {};
  const title = $("new-title").value.trim();
  const system = $("new-system").value.trim();
  const max = $("new-max").value.trim();
  if (title) body.title = title;
  if (system) body.system_prompt = system;
  if (max) body.window_policy = { max_messages: Number(max) };
  try {
    const conversation = await api("POST", "/conversations", body);
    $("new-form").reset();
    toggleNewForm(false);
    await reloadConversations();
    await openConversation(conversation.conversation_id);
  } catch (err) {
    fail(err);
  }
}

async function renameConversation() {
  const conversation = state.current;
  const title = window.prompt("New title", conversation.title || "");
  if (title === null) return;
  await api("PATCH", `/conversations/${conversation.conversation_id}`, { title: title.trim() || null });
  await openConversation(conversation.conversation_id);
  await reloadConversations();
}

async function deleteConversation() {
  const conversation = state.current;
  if (!window.confirm(`Delete “${conversation.title || "(untitled)"}”?`)) return;
  await api("DELETE", `/conversations/${conversation.conversation_id}`);
  closeConversation();
  await reloadConversations();
}

function closeConversation() {
  state.current = null;
  state.messages = [];
  state.tree = new Map();
  $("chat-title").textContent = "No conversation open";
  $("chat-title").removeAttribute("title");
  $("messages").replaceChildren();
  for (const id of ["rename-btn", "delete-btn", "inspect-btn"]) $(id).hidden = true;
  setInspecting(false);
}

// ------------------------------------------------------------------ chat (CON-3)

async function openConversation(id) {
  let messages = [];
  let cursor = null;
  let conversation = null;
  do {
    const page = await api("GET", `/conversations/${id}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    conversation = conversation || page;
    messages = messages.concat(page.messages);
    cursor = page.next_cursor;
  } while (cursor);
  const tree = await api("GET", `/conversations/${id}/tree?limit=200`);
  state.current = conversation;
  state.messages = messages;
  state.tree = new Map(tree.messages.map((m) => [m.message_id, m]));
  $("chat-title").textContent = conversation.title || "(untitled)";
  $("chat-title").title = conversation.title || "(untitled)"; // the whole title where it is clamped
  for (const button of ["rename-btn", "delete-btn", "inspect-btn"]) $(button).hidden = false;
  for (const row of $("conv-list").querySelectorAll("li")) {
    row.querySelector(".open").setAttribute("aria-current", row.dataset.id === id ? "true" : "false");
  }
  renderMessages();
  if (state.inspecting) await inspect();
}

function siblingsOf(message) {
  const node = state.tree.get(message.message_id);
  if (!node) return [];
  if (node.parent_id) {
    const parent = state.tree.get(node.parent_id);
    return parent ? parent.children : [];
  }
  return [...state.tree.values()].filter((m) => !m.parent_id).map((m) => m.message_id);
}

/** The leaf a branch switch makes active: down the active child, else the newest one. */
function leafOf(id) {
  let node = state.tree.get(id);
  while (node && node.children && node.children.length) {
    const next = node.children.map((c) => state.tree.get(c)).find((c) => c && c.active);
    node = next || state.tree.get(node.children[node.children.length - 1]);
  }
  return node ? node.message_id : id;
}

async function switchBranch(messageId) {
  await api("PUT", `/conversations/${state.current.conversation_id}/active`, { message_id: leafOf(messageId) });
  await openConversation(state.current.conversation_id);
}

function branchControl(message) {
  const siblings = siblingsOf(message);
  if (siblings.length < 2) return null;
  const index = siblings.indexOf(message.message_id);
  const label = `branch ${index + 1} of ${siblings.length}`;
  return el(
    "span",
    { class: "branch", role: "group", "aria-label": label },
    el("button", {
      type: "button",
      "aria-label": "Previous branch",
      disabled: index <= 0,
      text: "‹",
      onclick: () => switchBranch(siblings[index - 1]).catch(fail),
    }),
    el("span", { text: `${index + 1}/${siblings.length}` }),
    el("button", {
      type: "button",
      "aria-label": "Next branch",
      disabled: index >= siblings.length - 1,
      text: "›",
      onclick: () => switchBranch(siblings[index + 1]).catch(fail),
    }),
  );
}

function toolPair(call, result) {
  const fn = call.function || {};
  return el(
    "details",
    { class: "tool" },
    el("summary", { text: `tool ${fn.name || "?"}(${(fn.arguments || "").slice(0, 60)})${result ? " → result" : " (no result yet)"}` }),
    el("div", { class: "hint", text: `call ${call.id}` }),
    el("pre", { text: fn.arguments || "" }),
    result ? el("div", { class: "hint", text: "result" }) : null,
    result ? el("pre", { text: result.content || "" }) : null,
  );
}

function messageItem(message, results) {
  const meta = [el("span", { text: message.role })];
  if (message.model) meta.push(el("span", { text: message.model }));
  if (message.usage) meta.push(el("span", { text: `${num(message.usage.total_tokens)} tokens` }));
  if (message.cost) {
    const cost = message.cost.usd ? `${message.cost.usd}${message.cost.status === "estimated" ? " (estimated)" : ""}` : "cost unknown";
    meta.push(el("span", { text: cost }));
  }
  if (message.pinned) meta.push(el("span", { class: "badge pinned", text: "pinned" }));
  if (message.status && message.status !== "ok") meta.push(el("span", { class: "badge dropped", text: message.status }));
  meta.push(el("span", { text: when(message.created_at) }));
  const actions = el("div", { class: "msg-actions" });
  if (message.role === "user") {
    actions.append(el("button", { type: "button", text: "Edit", onclick: (e) => startEdit(message, e.target) }));
  }
  if (message.role === "assistant") {
    actions.append(
      el("button", { type: "button", text: "Regenerate", onclick: () => regenerate(message).catch(fail) }),
    );
  }
  const branch = branchControl(message);
  if (branch) actions.append(branch);
  const error = message.error
    ? el(
        "div",
        { class: "error" },
        el("div", { text: `The model failed: ${message.error.message || "no message"}` }),
        message.error.provider_response
          ? el(
              "details",
              {},
              el("summary", { text: "The provider's response" }),
              el("pre", { text: JSON.stringify(message.error.provider_response, null, 2) }),
            )
          : null,
      )
    : null;
  const text = message.content || message.refusal || "";
  return el(
    "li",
    { class: `msg ${message.role}`, "data-id": message.message_id },
    el("div", { class: "meta" }, meta),
    text ? el("div", { class: "text", text }) : null,
    (message.tool_calls || []).map((call) => toolPair(call, results.get(call.id))),
    error,
    actions,
  );
}

function renderMessages() {
  const results = new Map();
  for (const m of state.messages) if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  const calls = new Set();
  for (const m of state.messages) for (const c of m.tool_calls || []) calls.add(c.id);
  const items = state.messages
    .filter((m) => !(m.role === "tool" && calls.has(m.tool_call_id)))
    .map((m) => messageItem(m, results));
  $("messages").replaceChildren(...items);
  if (!items.length) $("messages").append(el("li", { class: "hint", text: "No messages yet. Write one below." }));
}

function startEdit(message, button) {
  const item = button.closest("li");
  if (item.querySelector("form")) return; // already editing this one
  const box = el("textarea", { rows: 3, "aria-label": "Edited message" });
  box.value = message.content || "";
  const form = el(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        progress("Sending the edited message…");
        try {
          const path = `/conversations/${state.current.conversation_id}/messages/${message.message_id}/edit`;
          await api("POST", path, { content: box.value });
          await afterTurn();
        } catch (err) {
          fail(err);
        } finally {
          progress("");
        }
      },
    },
    box,
    el(
      "div",
      { class: "row" },
      el("button", { type: "submit", text: "Send edit" }),
      el("button", { type: "button", class: "quiet", text: "Cancel", onclick: () => renderMessages() }),
    ),
  );
  item.append(form);
  box.focus();
}

async function regenerate(message) {
  progress("Asking for another answer…");
  try {
    await api("POST", `/conversations/${state.current.conversation_id}/messages/${message.message_id}/regenerate`, {});
    await afterTurn();
  } finally {
    progress("");
  }
}

async function afterTurn() {
  await openConversation(state.current.conversation_id);
  await reloadConversations();
}

/** Read a Server-Sent Events body; `onEvent` gets each `data:` payload parsed (or the raw text). */
async function readEvents(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      if (!data || data === "[DONE]") continue;
      let parsed = data;
      try {
        parsed = JSON.parse(data);
      } catch {
        parsed = data;
      }
      onEvent(parsed);
    }
    if (done) return;
  }
}

// ------------------------------------------------------------------ the composer and its queue (CON-7)
// Nothing typed is lost. The box clears the moment a message is sent, so what is typed while the reply
// streams is the next message. Sent while a reply is on its way, it is queued (listed above the box,
// each one can be taken back) and the queue goes out in order, one message as each reply ends. A send
// that fails puts its text, and what was queued behind it, back in the box.

function setWaiting(waiting) {
  const button = $("send-btn");
  button.textContent = waiting ? "Send after reply" : "Send";
  if (waiting) button.title = "Waiting for the reply… A message sent now is queued and goes out when the reply ends.";
  else button.removeAttribute("title");
  button.classList.toggle("waiting", waiting);
}

function renderQueue() {
  const queue = state.outbox.queue;
  $("queue-box").hidden = !queue.length;
  $("queue").replaceChildren(
    ...queue.map((item, index) =>
      el(
        "li",
        {},
        el("span", { class: "text", text: item.text }),
        el("button", {
          type: "button",
          class: "quiet",
          text: "Take back",
          "aria-label": `Take back queued message ${index + 1}`,
          onclick: () => takeBack(item),
        }),
      ),
    ),
  );
}

/** Texts back into the composer, ahead of anything typed there since. */
function restore(texts) {
  const input = $("composer-input");
  input.value = [...texts, input.value].filter((text) => text.trim()).join("\n\n");
  input.focus();
}

function takeBack(item) {
  const queue = state.outbox.queue;
  const at = queue.indexOf(item);
  if (at < 0) return; // it has gone out meanwhile
  queue.splice(at, 1);
  renderQueue();
  restore([item.text]);
}

function clearOutbox() {
  const outbox = state.outbox;
  outbox.generation += 1; // a send still under way finishes without touching the page
  outbox.busy = false;
  outbox.queue.splice(0);
  renderQueue();
  setWaiting(false);
  progress("");
  $("composer-input").value = "";
}

function send(event) {
  event.preventDefault();
  const input = $("composer-input");
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  showAlert("");
  const item = { text, conversationId: state.current ? state.current.conversation_id : null };
  if (state.outbox.busy) {
    state.outbox.queue.push(item);
    renderQueue();
    return;
  }
  deliverAll(item);
}

/** `first`, then whatever is queued meanwhile, one message per finished reply, in order. */
async function deliverAll(first) {
  const outbox = state.outbox;
  const generation = outbox.generation;
  outbox.busy = true;
  setWaiting(true);
  let item = first;
  try {
    while (item) {
      const conversationId = await deliver(item, generation);
      if (generation !== outbox.generation) return;
      item = outbox.queue.shift();
      // Queued while a new conversation was being made: it goes to that conversation.
      if (item && !item.conversationId) item.conversationId = conversationId;
      renderQueue();
    }
  } catch (err) {
    if (generation !== outbox.generation) return;
    const queued = outbox.queue.splice(0).map((q) => q.text);
    renderQueue();
    restore([item.text, ...queued]);
    showAlert(`Not sent: ${err.message}. What you wrote is back in the box.`);
  } finally {
    if (generation === outbox.generation) {
      outbox.busy = false;
      setWaiting(false);
      progress("");
    }
  }
}

/** One message out and its reply in; the conversation it went to. Throws only when it was not sent. */
async function deliver(item, generation) {
  if (item.conversationId && !(state.current && state.current.conversation_id === item.conversationId)) {
    await openConversation(item.conversationId);
  }
  progress("Waiting for the reply…");
  const body = { content: item.text };
  if (item.conversationId) body.conversation_id = item.conversationId;
  const sent = el("li", { class: "msg user" }, el("div", { class: "text", text: item.text }));
  const live = el("li", { class: "msg assistant", "aria-busy": "true" }, el("div", { class: "meta", text: "assistant · streaming" }));
  const liveText = el("div", { class: "text" });
  live.append(liveText);
  for (const hint of $("messages").querySelectorAll(":scope > li.hint")) hint.remove(); // "No messages yet"
  $("messages").append(sent, live);
  let turn = null;
  try {
    const res = await request("POST", "/messages", body, { Accept: "text/event-stream" });
    const type = res.headers.get("content-type") || "";
    if (type.includes("text/event-stream")) {
      await readEvents(res, (data) => {
        if (generation !== state.outbox.generation) return;
        if (data && data.object === "chat.completion.chunk") {
          const delta = (data.choices && data.choices[0] && data.choices[0].delta) || {};
          if (delta.content) {
            liveText.textContent += delta.content;
            progress("Receiving the reply…");
          }
        } else if (data && data.object === "chat.turn") {
          turn = data;
        } else if (data && data.error) {
          showAlert(`The model failed: ${data.error.message || JSON.stringify(data.error)}`);
        }
      });
    } else {
      turn = await answerOf(res);
    }
  } catch (err) {
    sent.remove();
    live.remove();
    throw err;
  }
  const id = (turn && turn.conversation_id) || item.conversationId;
  if (generation !== state.outbox.generation) return id;
  if (turn && turn.assistant_message && turn.assistant_message.status === "error") {
    const err = turn.assistant_message.error || {};
    showAlert(`The model failed: ${err.message || "no message"}`);
  }
  if (id) {
    // The message is stored: a failed refresh is shown, it does not make the message unsent.
    try {
      await openConversation(id);
      await reloadConversations();
    } catch (err) {
      fail(err);
    }
  }
  return id;
}

// ------------------------------------------------------------------ window inspector (CON-4)

// The engine's drop reasons (engine/window.py) in words; the code stays visible beside them.
const REASONS = {
  max_messages: "over the window's message cap (max_messages)",
  max_chars: "over the window's character cap (max_chars)",
  token_budget: "no room left in the token budget (token_budget)",
  orphan_tool_result: "a tool result whose call is not in the window (orphan_tool_result)",
  incomplete_tool_call: "a tool call whose results are not all there (incomplete_tool_call)",
  recall: "relevant to the message being sent, recalled from older history (MEM-8)",
  facts: "the known facts about you, a labelled block within the budget (MEM-35)",
  across: "relevant messages of your other conversations, a labelled block (MEM-13)",
};

function setInspecting(on) {
  state.inspecting = on;
  $("inspector").hidden = !on;
  $("view-chat").classList.toggle("inspecting", on);
  $("inspect-btn").setAttribute("aria-expanded", on ? "true" : "false");
}

async function inspect() {
  if (!state.current) return;
  const content = $("composer-input").value.trim() || "(your next message)";
  const window_ = await api("POST", `/conversations/${state.current.conversation_id}/window`, { content });
  renderInspector(window_);
}

function renderInspector(window_) {
  const { entries, budget, summary } = window_.inspect;
  const stats = window_.stats;
  const room = budget.context_length - budget.reserve_tokens;
  const limit =
    budget.token_budget === null
      ? "no token limit"
      : `${num(budget.token_budget)} tokens allowed` + (budget.token_budget < room ? " by the window's max_tokens" : "");
  $("budget-line").textContent =
    `${num(budget.tokens_used)} tokens would be sent; ${limit} ` +
    `(the model's context ${num(budget.context_length)} − ${num(budget.reserve_tokens)} reserved for the reply). ` +
    `Model ${stats.model}; kept ${stats.kept}, dropped ${stats.dropped_count}.`;
  const box = $("summary-box");
  box.hidden = !summary;
  if (summary) {
    box.replaceChildren(
      el("strong", { text: `Summary of messages ${summary.from_seq}–${summary.to_seq}` }),
      el("span", { class: "hint", text: ` · ${num(summary.tokens)} tokens · ${summary.included ? "sent" : "did not fit"}` }),
      el("p", { class: "text", text: summary.text }),
    );
  }
  const most = Math.max(1, ...entries.map((e) => e.tokens));
  const items = entries.map((entry) => {
    const badges = [el("span", { class: `badge ${entry.state}`, text: entry.state })];
    if (entry.pinned) badges.push(el("span", { class: "badge pinned", text: "pinned" }));
    if (entry.recalled && entry.state !== "recalled") badges.push(el("span", { class: "badge recalled", text: "recalled" }));
    if (entry.score !== undefined) badges.push(el("span", { class: "badge score", text: `score ${entry.score.toFixed(2)}` }));
    if (entry.tool_group) badges.push(el("span", { class: "badge tool", text: `tool group ${entry.tool_group.slice(-6)}` }));
    const pin = entry.message_id
      ? el("button", {
          type: "button",
          text: entry.pinned ? "Unpin" : "Pin",
          "aria-label": `${entry.pinned ? "Unpin" : "Pin"} message ${entry.seq}`,
          onclick: () => setPin(entry.message_id, !entry.pinned).catch(fail),
        })
      : null;
    const width = Math.max(1, Math.round((entry.tokens / most) * 100));
    return el(
      "li",
      { class: `entry ${entry.state}`, "data-id": entry.message_id || (entry.block ? entry.block.kind : "system"), "data-state": entry.state },
      el(
        "div",
        { class: "head" },
        el("strong", { text: entry.seq ? `#${entry.seq} ${entry.role}` : entry.block ? `${entry.block.kind} block` : entry.role }),
        badges,
        el("span", { class: "hint", text: `${num(entry.tokens)} tokens` }),
        pin,
      ),
      el("div", { class: "bar", role: "img", "aria-label": `${entry.tokens} tokens` }, el("span", { style: { width: `${width}%` } })),
      entry.reason ? el("div", { class: "reason hint", text: `why: ${REASONS[entry.reason] || entry.reason}` }) : null,
      el("div", { class: "preview", text: entry.preview }),
    );
  });
  $("window-entries").replaceChildren(...items);
}

async function setPin(messageId, pinned) {
  await api("PATCH", `/conversations/${state.current.conversation_id}/messages/${messageId}`, { pinned });
  await openConversation(state.current.conversation_id);
}

// ------------------------------------------------------------------ turn log (CON-5)

async function loadTurns() {
  const list = $("turns");
  list.replaceChildren();
  if (!state.current) {
    $("turns-hint").textContent = "Open a conversation in Chat to see its turns.";
    return;
  }
  $("turns-hint").textContent = `Turns of “${state.current.title || "(untitled)"}”.`;
  const events = [];
  let cursor = null;
  for (let page = 0; page < 10; page += 1) {
    const res = await request("GET", `/conversations/${state.current.conversation_id}/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    if (!res.ok) await answerOf(res); // throws the error (and signs out on 401)
    const text = await res.text();
    for (const line of text.split("\n")) if (line.trim()) events.push(JSON.parse(line));
    cursor = res.headers.get("x-next-cursor");
    if (!cursor) break;
  }
  const turns = new Map();
  for (const event of events) {
    if (event.turn === null || event.turn === undefined) continue;
    if (!turns.has(event.turn)) turns.set(event.turn, []);
    turns.get(event.turn).push(event);
  }
  for (const [turn, steps] of turns) {
    const start = new Date(steps[0].ts).getTime();
    const end = steps.find((s) => s.type === "turn_end");
    const tokens = end && end.meta && end.meta.tokens ? `${num(end.meta.tokens.total)} tokens` : "";
    const took = end && end.meta && end.meta.durationMs !== undefined ? `${num(end.meta.durationMs)} ms` : "";
    const status = end && end.meta ? end.meta.status : "running";
    list.append(
      el(
        "li",
        { class: "turn-item" },
        el("span", { class: "turn", text: `Turn ${turn} · ${status} ${took ? `· ${took}` : ""} ${tokens ? `· ${tokens}` : ""}` }),
        el("span", { class: "when", text: when(steps[0].ts) }),
        el(
          "ol",
          { class: "timeline" },
          steps.map((step) => {
            const offset = new Date(step.ts).getTime() - start;
            const stepTokens = step.meta && step.meta.tokens ? ` · tokens ${JSON.stringify(step.meta.tokens)}` : "";
            return el(
              "li",
              {},
              el("span", { class: "when", text: `+${offset} ms` }),
              `${step.type}${step.role ? ` (${step.role})` : ""}${stepTokens}`,
              step.content ? el("div", { class: "hint", text: String(step.content).slice(0, 200) }) : null,
            );
          }),
        ),
      ),
    );
  }
  if (!turns.size) list.append(el("li", { text: "No turns yet." }));
}

// ------------------------------------------------------------------ usage (CON-5)

function isoDay(date) {
  return date.toISOString().slice(0, 10);
}

async function loadUsage(event) {
  if (event) event.preventDefault();
  const days = Number($("usage-days").value);
  const to = new Date();
  const from = new Date(to.getTime() - (days - 1) * 86400000);
  const report = await api("GET", `/usage?from=${isoDay(from)}&to=${isoDay(to)}`);
  const byDay = new Map(report.days.map((d) => [d.date, d.totals]));
  const series = [];
  for (let i = 0; i < days; i += 1) {
    const day = isoDay(new Date(from.getTime() + i * 86400000));
    series.push([day, byDay.get(day)]);
  }
  const most = Math.max(1, ...series.map(([, t]) => (t ? t.total_tokens : 0)));
  $("usage-chart").replaceChildren(
    ...series.map(([day, totals]) => {
      const tokens = totals ? totals.total_tokens : 0;
      const cost = totals ? totals.cost.usd : "$0";
      const label = `${day}: ${num(tokens)} tokens, ${cost}`;
      return el("div", {
        class: "day",
        tabindex: 0,
        title: label,
        "aria-label": label,
        style: { height: `${Math.round((tokens / most) * 100)}%` },
      });
    }),
  );
  const t = report.totals;
  $("usage-totals").textContent =
    `${report.from} to ${report.to}: ${num(t.calls)} model calls, ${num(t.total_tokens)} tokens ` +
    `(${num(t.prompt_tokens)} prompt, ${num(t.completion_tokens)} completion), cost ${t.cost.usd}` +
    (t.unpriced_calls ? `, ${t.unpriced_calls} calls without a price` : "") +
    (report.budget && report.budget.over ? ". Over budget." : ".");
}

// ------------------------------------------------------------------ dialogue worlds (CON-5)

async function loadWorlds() {
  const page = await api("GET", "/worlds?limit=100");
  const select = $("world-select");
  const chosen = select.value;
  select.replaceChildren(
    el("option", { value: "", text: page.items.length ? "Pick a world" : "No worlds yet" }),
    ...page.items.map((w) => el("option", { value: w.world_id, text: `${w.world_id} (${w.dialogues} dialogues)` })),
  );
  if (chosen) select.value = chosen;
}

async function openWorld(event) {
  event.preventDefault();
  const worldId = $("world-id").value.trim() || $("world-select").value;
  if (!worldId) {
    showAlert("Pick a world or type its id.");
    return;
  }
  showAlert("");
  const page = await api("GET", `/worlds/${encodeURIComponent(worldId)}/dialogues?limit=100`);
  const participants = [...new Set(page.items.flatMap((d) => d.participants))].sort();
  state.world = { id: worldId, participants, dialogues: page.items };
  $("participants").replaceChildren(
    ...participants.map((p, i) =>
      el("label", {}, el("input", { type: "checkbox", value: p, checked: i < 2 }), p),
    ),
  );
  if (!participants.length) $("participants").append(el("span", { class: "hint", text: "This world has no dialogues." }));
  $("participants-box").hidden = false;
  $("world-history").hidden = true;
}

function chosenParticipants() {
  return [...$("participants").querySelectorAll("input:checked")].map((i) => i.value);
}

function entryItem(entry) {
  return el(
    "li",
    {},
    el("span", { class: "when", text: `${entry.game_time} · tick ${entry.game_tick} · ${entry.dialogue_id}` }),
    el("strong", { text: entry.name || entry.participant_id }),
    `: ${entry.content}`,
  );
}

async function showHistory() {
  const chosen = chosenParticipants();
  if (!chosen.length) {
    showAlert("Choose at least one participant.");
    return;
  }
  showAlert("");
  const world = encodeURIComponent(state.world.id);
  const history = await api("GET", `/worlds/${world}/history?participants=${chosen.map(encodeURIComponent).join(",")}&limit=50`);
  const empty = (text) => el("li", { class: "hint", text });
  $("primary").replaceChildren(...(history.primary.length ? history.primary.map(entryItem) : [empty("Nothing said by exactly these participants.")]));
  $("ancillary").replaceChildren(...(history.ancillary.length ? history.ancillary.map(entryItem) : [empty("No larger dialogue includes them all.")]));
  for (const id of ["prompt-ai", "prompt-from"]) {
    $(id).replaceChildren(...chosen.map((p) => el("option", { value: p, text: p })));
  }
  if (chosen.length > 1) $("prompt-from").value = chosen[0];
  if (chosen.length > 1) $("prompt-ai").value = chosen[1];
  $("prompt-out").replaceChildren();
  $("world-history").hidden = false;
}

async function buildPrompt(event) {
  event.preventDefault();
  const body = {
    participants: chosenParticipants(),
    ai_participant: $("prompt-ai").value,
    system_prompt: $("prompt-system").value || "You are a character in this world.",
    current: { participant_id: $("prompt-from").value, content: $("prompt-text").value || "…" },
  };
  const prompt = await api("POST", `/worlds/${encodeURIComponent(state.world.id)}/prompt`, body);
  $("prompt-out").replaceChildren(
    ...prompt.messages.map((m) => el("li", {}, el("strong", { text: `${m.role}${m.name ? ` (${m.name})` : ""}: ` }), m.content)),
    el("li", { class: "hint", text: `${num(prompt.stats.tokens_used)} tokens` }),
  );
}

// ------------------------------------------------------------------ your data (PRV-1, PRV-2)

/** Whose data: the dev-mode user id, or the JWT's subject (the API refuses anyone else's). */
function me() {
  return state.identity.user || state.identity.sub;
}

function userPath() {
  return `/users/${encodeURIComponent(me())}`;
}

function resetData() {
  state.dataJobs += 1;
  $("export-status").textContent = "";
  $("export-link").hidden = true;
  $("export-link").removeAttribute("href");
  $("export-btn").disabled = false;
  $("erase-confirm").value = "";
  $("erase-btn").disabled = true;
  $("erase-status").textContent = "";
  $("erase-receipt").hidden = true;
}

function showData() {
  $("data-user").textContent = me();
  $("erase-user").textContent = me();
}

function jobStatus(id, text, error = false) {
  $(id).textContent = text;
  $(id).classList.toggle("error", error);
}

/** `read()` until its answer is done, showing each state; polls less often as it waits. */
async function untilDone(read, first, show) {
  const generation = state.dataJobs;
  let job = first;
  let pause = 300;
  while (job.status !== "done") {
    show(job);
    await new Promise((resolve) => setTimeout(resolve, pause));
    if (generation !== state.dataJobs) return null; // signed out meanwhile
    pause = Math.min(pause * 1.5, 3000);
    job = await read();
  }
  return job;
}

async function exportData() {
  const button = $("export-btn");
  button.disabled = true;
  $("export-link").hidden = true;
  jobStatus("export-status", "Starting the export…");
  try {
    const started = await api("POST", `${userPath()}/exports`);
    const path = `${userPath()}/exports/${encodeURIComponent(started.export_id)}`;
    const done = await untilDone(() => api("GET", path), started, (job) =>
      jobStatus("export-status", `Export ${job.status}: writing the archive…`),
    );
    if (!done) return;
    const counts = done.counts || {};
    const minutes = Math.max(1, Math.round((done.expires_in || 900) / 60));
    jobStatus(
      "export-status",
      `Export ready: ${num(counts.conversations)} conversations, ${num(counts.messages)} messages, ` +
        `${num(done.bytes)} bytes. The link works for ${minutes} minutes.`,
    );
    const link = $("export-link");
    link.href = done.url;
    link.setAttribute("download", `chat-export-${done.export_id}.json.gz`);
    link.hidden = false;
  } catch (err) {
    jobStatus("export-status", `Export failed: ${err.message}`, true);
  } finally {
    button.disabled = false;
  }
}

function confirmTyped() {
  return $("erase-confirm").value.trim() === me();
}

function receiptRows(receipt) {
  const c = receipt.counts || {};
  const rows = [
    ["User", receipt.user_id],
    ["Asked by", receipt.requested_by],
    ["Asked at", when(receipt.requested_at)],
    ["Finished at", when(receipt.finished_at)],
    ["Items erased", num(c.items)],
    ["Files erased", num(c.objects)],
    ["Passes", num(c.passes)],
  ];
  return rows.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: value || "–" })]);
}

async function eraseData(event) {
  event.preventDefault();
  if (!confirmTyped()) {
    jobStatus("erase-status", `Type ${me()} to confirm.`, true);
    return;
  }
  $("erase-btn").disabled = true;
  $("erase-confirm").disabled = true;
  $("erase-receipt").hidden = true;
  jobStatus("erase-status", "Starting the erasure…");
  try {
    const started = await api("POST", `${userPath()}/erasure`);
    const done = await untilDone(() => api("GET", `${userPath()}/erasure`), started, (job) =>
      jobStatus(
        "erase-status",
        `Erasing (${job.status}, ${job.phase || "queued"}): ${num((job.counts || {}).items)} items so far…`,
      ),
    );
    if (!done) return;
    jobStatus("erase-status", "Your data is erased. The receipt:");
    $("erase-receipt").replaceChildren(...receiptRows(done));
    $("erase-receipt").hidden = false;
    $("erase-confirm").value = "";
    closeConversation();
    reloadConversations();
  } catch (err) {
    jobStatus("erase-status", `Erasure failed: ${err.message}`, true);
  } finally {
    $("erase-confirm").disabled = false;
    $("erase-btn").disabled = !confirmTyped();
  }
}

// ------------------------------------------------------------------ wiring

function wire() {
  $("signin-form").addEventListener("submit", signIn);
  $("signout").addEventListener("click", () => signOut(""));
  for (const button of document.querySelectorAll("#views button")) {
    button.addEventListener("click", () => showView(button.dataset.view));
  }
  let searchTimer = null;
  $("conv-search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => reloadConversations(), 250);
  });
  $("conv-new").addEventListener("click", () => toggleNewForm($("new-form").hidden));
  $("new-cancel").addEventListener("click", () => toggleNewForm(false));
  $("new-form").addEventListener("submit", createConversation);
  $("rename-btn").addEventListener("click", () => renameConversation().catch(fail));
  $("delete-btn").addEventListener("click", () => deleteConversation().catch(fail));
  $("inspect-btn").addEventListener("click", () => {
    setInspecting(!state.inspecting);
    if (state.inspecting) inspect().catch(fail);
  });
  $("inspector-close").addEventListener("click", () => setInspecting(false));
  $("composer").addEventListener("submit", send);
  $("composer-input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("composer").requestSubmit();
  });
  $("usage-form").addEventListener("submit", (e) => loadUsage(e).catch(fail));
  $("world-form").addEventListener("submit", (e) => openWorld(e).catch(fail));
  $("history-btn").addEventListener("click", () => showHistory().catch(fail));
  $("prompt-form").addEventListener("submit", (e) => buildPrompt(e).catch(fail));
  $("export-btn").addEventListener("click", () => exportData());
  $("erase-confirm").addEventListener("input", () => {
    $("erase-btn").disabled = !confirmTyped();
  });
  $("erase-form").addEventListener("submit", (e) => eraseData(e));
  new IntersectionObserver((seen) => {
    if (seen.some((s) => s.isIntersecting)) loadMoreConversations();
  }).observe($("conv-more"));
  $("composer").hidden = false;
}

document.addEventListener("DOMContentLoaded", () => {
  wire();
  state.identity = restoreIdentity();
  if (state.identity) enter();
  else signOut("");
});
