/* Parley web-chat widget: <script src="{API}/widget.js" data-client-id="wc_..." async></script> */
(() => {
  "use strict";
  const script = document.currentScript;
  if (!script || window.ParleyWidget || document.getElementById("parley-widget")) return;
  const cfg = script.dataset;
  const clientId = cfg.clientId;
  if (!clientId) return;
  const API = new URL(script.src, location.href).origin;
  const title = cfg.title || "Chat with us";
  const storeKey = "parley:" + clientId;

  const load = () => {
    try { return JSON.parse(localStorage.getItem(storeKey)) || {}; } catch { return {}; }
  };
  const save = (v) => {
    try { localStorage.setItem(storeKey, JSON.stringify(v)); } catch {}
  };
  const emit = (name, detail) => window.dispatchEvent(new CustomEvent(name, { detail }));
  const backoff = (n) => Math.min(15000, 1000 * 2 ** n);
  const uuid = () =>
    crypto.randomUUID
      ? crypto.randomUUID()
      : "10000000-1000-4000-8000-100000000000".replace(/[018]/g, (c) =>
          (c ^ (crypto.getRandomValues(new Uint8Array(1))[0] & (15 >> (c / 4)))).toString(16));
  const h = (tag, props = {}, ...kids) => {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v);
    }
    el.append(...kids);
    return el;
  };

  const svg = (d, s = 20) =>
    `<svg width="${s}" height="${s}" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false"><path d="${d}"/></svg>`;
  const CSS = `
:host{all:initial;position:fixed;right:20px;bottom:20px;z-index:2147483000;width:56px;height:56px}
*{box-sizing:border-box}
[hidden]{display:none!important}
.w{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328}
.sr,.typing:empty{position:absolute;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
button,textarea,input{font:inherit;color:inherit}
:focus-visible,input:focus-visible+label{outline:2px solid #2563eb;outline-offset:2px}
.bubble{position:fixed;right:20px;bottom:20px;z-index:2147483000;width:56px;height:56px;border:0;border-radius:50%;background:#1f2937;color:#fff;cursor:pointer;display:grid;place-items:center;box-shadow:0 6px 20px rgba(0,0,0,.22)}
.bubble:hover{background:#111827}
.panel{position:fixed;right:20px;bottom:88px;z-index:2147483000;width:360px;height:520px;max-width:calc(100vw - 40px);max-height:calc(100vh - 108px);display:flex;flex-direction:column;background:#fff;border:1px solid #e5e7eb;border-radius:14px;box-shadow:0 12px 40px rgba(0,0,0,.18);overflow:hidden;animation:pw-in .18s ease-out}
@keyframes pw-in{from{opacity:0;transform:translateY(8px)}}
header{display:flex;align-items:center;gap:8px;padding:10px 10px 10px 16px;border-bottom:1px solid #eef0f2}
h2{flex:1;margin:0;font-size:15px;font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.icon{display:grid;place-items:center;flex:none;width:34px;height:34px;border:0;border-radius:8px;background:none;color:#57606a;cursor:pointer}
.icon:hover{background:#f3f4f6;color:#1f2328}
.human{flex:none;padding:4px 10px;border:1px solid #d0d7de;border-radius:999px;background:#fff;font-size:12px;color:#57606a;cursor:pointer}
.human:hover:not(:disabled){background:#f3f4f6;color:#1f2328}
.human:disabled{cursor:default;opacity:.7}
.alert{margin:16px;padding:10px 12px;border-radius:8px;background:#fef2f2;color:#991b1b}
.log{flex:1;overflow-y:auto;margin:0;padding:16px;list-style:none;display:flex;flex-direction:column;gap:8px}
.log li{align-self:flex-start;max-width:85%;padding:8px 12px;border-radius:14px 14px 14px 4px;background:#f1f3f5;overflow-wrap:anywhere}
.log li[data-role=user]{align-self:flex-end;border-radius:14px 14px 4px 14px;background:#1f2937;color:#fff}
.log li[data-pending]{opacity:.7}
.log p{margin:0;white-space:pre-wrap}
.who{display:block;margin-bottom:2px;font-size:11px;font-weight:600;color:#57606a}
.log li[data-sender=operator]{background:#e0f2fe}
.more{align-self:center;margin:8px 0 0;padding:4px 12px;border:1px solid #d0d7de;border-radius:999px;background:#fff;font-size:12px;color:#57606a;cursor:pointer}
.more:hover{background:#f3f4f6;color:#1f2328}
.files{display:flex;flex-direction:column;gap:4px;margin-top:4px}
.files a{color:inherit}
.files img{display:block;max-width:160px;max-height:120px;margin-bottom:2px;border-radius:8px}
small{display:block;margin-top:2px;font-size:11px;opacity:.8}
small.err{opacity:1;color:#fecaca}
.typing{padding:0 16px 6px;font-size:12px;color:#57606a}
form{padding:8px;border-top:1px solid #eef0f2}
.row{display:flex;align-items:flex-end;gap:4px}
textarea{flex:1;min-width:0;max-height:120px;resize:none;padding:7px 10px;border:1px solid #d0d7de;border-radius:10px;background:#fff}
.send{padding:8px 14px;border:0;border-radius:10px;background:#1f2937;color:#fff;font-weight:600;cursor:pointer}
.chosen{display:flex;flex-wrap:wrap;gap:4px;margin:0 0 6px;padding:0;list-style:none}
.chosen li{display:flex;align-items:center;gap:2px;max-width:100%;padding:2px 2px 2px 8px;border-radius:8px;background:#f1f3f5;font-size:12px}
.chosen span{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.chosen .icon{width:24px;height:24px}
@media (max-width:480px){.panel{inset:0;width:auto;height:auto;max-width:none;max-height:none;border:0;border-radius:0}.open .bubble{display:none}}
@media (prefers-reduced-motion:reduce){*{animation:none!important;transition:none!important}}`;

  const host = document.createElement("div");
  host.id = "parley-widget";
  host.dataset.state = "loading";
  const root = host.attachShadow({ mode: "open" });
  root.innerHTML = `<style>${CSS}</style><div class="w">
<section class="panel" id="pw-panel" role="dialog" tabindex="-1" hidden>
<header><h2></h2><button type="button" class="human" hidden>Talk to a person</button><button type="button" class="icon close" aria-label="Close chat">${svg("M18 6 6 18M6 6l12 12")}</button></header>
<p class="alert" role="alert" hidden></p>
<button type="button" class="more" hidden>Earlier messages</button>
<ol class="log" role="log" aria-live="polite" aria-label="Messages"></ol>
<div class="typing" role="status"></div>
<form hidden><ul class="chosen" aria-label="Attached files" hidden></ul><div class="row">
<label for="pw-input" class="sr">Message</label>
<textarea id="pw-input" rows="1" placeholder="Write a message…"></textarea>
<input type="file" id="pw-files" class="sr" multiple aria-label="Attach files">
<label for="pw-files" class="icon" title="Attach files" aria-hidden="true">${svg("m21 12-8.5 8.5a5 5 0 0 1-7-7L14 5a3.3 3.3 0 0 1 4.7 4.7l-8.5 8.5a1.7 1.7 0 0 1-2.4-2.4L15.5 8")}</label>
<button type="submit" class="send">Send</button>
</div></form></section>
<button type="button" class="bubble" aria-label="Open chat" aria-expanded="false" aria-controls="pw-panel">${svg("M21 12a8 8 0 0 1-11.6 7.1L3 21l1.9-6.4A8 8 0 1 1 21 12z", 26)}</button></div>`;
  const $ = (s) => root.querySelector(s);
  const wrap = $(".w"), panel = $(".panel"), bubble = $(".bubble"), alertEl = $(".alert");
  const log = $(".log"), typing = $(".typing"), form = $("form"), ta = $("textarea");
  const fileInput = $("input"), chosenEl = $(".chosen");
  const more = $(".more");
  panel.setAttribute("aria-label", title);
  $("h2").textContent = title;

  // ---- messages, keyed by server id (or a temporary key while unsent) ----
  const list = [];
  const byKey = new Map();
  const nextT = () => Math.max(Date.now(), list.length ? list[list.length - 1].t + 1 : 0);
  const nearBottom = () => log.scrollHeight - log.scrollTop - log.clientHeight < 60;
  const scrollDown = () => { log.scrollTop = log.scrollHeight; };

  const fileLink = (f) => {
    const name = String(f.name || "file");
    let url = null;
    try { url = new URL(f.url, API); } catch {}
    if (!url || !/^(https?|blob):$/.test(url.protocol)) return h("span", { text: name });
    const a = h("a", { href: url.href, target: "_blank", rel: "noopener" });
    if (f.type === "image" || /^image\//.test(f.mimetype || "")) {
      a.append(h("img", { src: url.href, alt: name, loading: "lazy" }), h("span", { "aria-hidden": "true", text: name }));
    } else a.textContent = name;
    return a;
  };

  const render = (m) => {
    const li = m.el || (m.el = h("li"));
    li.replaceChildren();
    li.dataset.role = m.role;
    if (m.id) li.dataset.messageId = m.id;
    if (m.pending) li.dataset.pending = "true";
    else delete li.dataset.pending;
    if (m.error) li.dataset.error = "true";
    // who wrote it: the AI, or a person of the team by name (docs/web-chat.md)
    if (m.sender === "ai" || m.sender === "operator") {
      li.dataset.sender = m.sender;
      li.append(h("span", { class: "who", text: m.sender === "ai" ? "AI assistant" : `${m.senderName || "Team member"} · Team` }));
    }
    if (m.text) li.append(h("p", { text: m.text }));
    if (m.files.length) li.append(h("div", { class: "files" }, ...m.files.map(fileLink)));
    if (m.pending || m.error) li.append(h("small", { class: m.error ? "err" : "", text: m.error || "Sending…" }));
  };

  const insert = (m) => {
    const stick = nearBottom();
    byKey.set(m.key, m);
    render(m);
    const i = list.findIndex((o) => o.t > m.t);
    if (i < 0) {
      list.push(m);
      log.append(m.el);
    } else {
      log.insertBefore(m.el, list[i].el);
      list.splice(i, 0, m);
    }
    if (stick || m.pending) scrollDown();
  };

  const revoke = (m) => m.files.forEach((f) => f.url.startsWith("blob:") && URL.revokeObjectURL(f.url));
  const drop = (m) => {
    byKey.delete(m.key);
    list.splice(list.indexOf(m), 1);
    m.el.remove();
    revoke(m);
  };

  const urls = (files) => files.map((f) => f.url).join("\n");
  const add = (r) => {
    const id = r && (r.id ?? r.message_id);
    if (id == null) return;
    const key = String(id);
    const files = Array.isArray(r.files) ? r.files : [];
    const old = byKey.get(key);
    if (old) {
      if (files.length && urls(files) !== urls(old.files)) {
        revoke(old);
        old.files = files;
        render(old);
      }
      return;
    }
    const t = Date.parse(r.created_at);
    const sender = r.role === "user" ? "contact" : r.sender || (r.is_manual ? "operator" : "ai");
    insert({ key, id: key, role: r.role === "user" ? "user" : "assistant", sender, senderName: r.sender_name || null, text: r.message || "", files, t: t > 0 ? t : nextT() });
    emit("parley:message", r);
  };

  const confirm = (m, id) => {
    if (byKey.has(id)) return drop(m);
    byKey.delete(m.key);
    m.key = m.id = id;
    m.pending = false;
    byKey.set(id, m);
    render(m);
    emit("parley:message", { id, role: "user", message: m.text, files: m.files });
  };

  // ---- typing indicator ----
  let typingTimer = 0;
  const setTyping = (on) => {
    clearTimeout(typingTimer);
    typing.textContent = on ? "Agent is typing…" : "";
    if (on) typingTimer = setTimeout(setTyping, 30000, false);
  };

  // ---- session ----
  let sess = null, state = "loading", pendingSession = null;
  const setState = (s) => {
    state = host.dataset.state = s;
    alertEl.hidden = s === "ready";
    $(".human").hidden = s !== "ready";
    if (s === "unavailable") alertEl.textContent = "Chat is unavailable right now.";
  };

  const establish = async () => {
    const stored = load();
    let res, body;
    try {
      res = await fetch(API + "/api/widget/session", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(stored.session ? { client_id: clientId, session: stored.session } : { client_id: clientId }),
      });
      body = await res.json().catch(() => null);
    } catch {
      return "retry";
    }
    if (res.status === 403) {
      if (state !== "refused") refuse();
      return "refused";
    }
    const d = body && body.data;
    if (!res.ok || !d || !d.session) return res.status >= 500 || res.status === 429 ? "retry" : "fatal";
    const changed = (stored.contact_id && stored.contact_id !== d.contact_id) || (sess && sess.contact_id !== d.contact_id);
    sess = d;
    save({ session: d.session, contact_id: d.contact_id });
    if (changed) {
      // session expired: a new contact, start the conversation over (unsent messages are kept and sent again)
      list.filter((m) => !m.pending).forEach(drop);
      historyPages = 0;
      showMore();
      setTyping(false);
      if (ws) {
        ws.onclose = null;
        ws.close();
        ws = null;
        connect();
      }
    }
    emit("parley:session", { session: d.session, contact_id: d.contact_id, conversation_id: d.conversation_id });
    if (d.handoff_state) showHandoff(d.handoff_state);
    return "ok";
  };
  const session = () => pendingSession || (pendingSession = establish().finally(() => (pendingSession = null)));

  // ---- history: the newest page on open, earlier pages on request (newest first, so a page fetched
  // after new messages arrived overlaps the one before it: shown once, by id, never a gap) ----
  const PAGE = 50;
  let historyPages = 0, historyLast = 1;
  const showMore = () => { more.hidden = !(historyPages > 0 && historyPages < historyLast); };
  const fetchPage = async (page, again) => {
    const s = sess;
    const res = await fetch(API + "/api/widget/messages?per_page=" + PAGE + "&page=" + page, {
      headers: { Authorization: "Bearer " + s.session },
    });
    if (res.status === 401 && !again) return (await session()) === "ok" ? fetchPage(page, true) : null;
    const body = res.ok && (await res.json());
    const d = body && body.data;
    if (!d || !Array.isArray(d.data) || s.contact_id !== sess.contact_id) return null;
    historyLast = d.last_page || 1;
    return d.data;
  };
  const loadHistory = async () => {
    try {
      const recs = await fetchPage(1);
      if (!recs) return;
      recs.slice().reverse().forEach(add);
      historyPages = Math.max(historyPages, 1);
      showMore();
    } catch {}
  };
  more.onclick = async () => {
    if (more.disabled) return;
    more.disabled = true;
    try {
      const recs = await fetchPage(historyPages + 1);
      if (recs) {
        // keep what the visitor was reading in place while older messages go in above it
        const before = log.scrollHeight, top = log.scrollTop;
        recs.slice().reverse().forEach(add);
        log.scrollTop = top + log.scrollHeight - before;
        historyPages++;
      }
    } catch {}
    more.disabled = false;
    showMore();
  };

  // ---- socket (Engine.IO v4 / Socket.IO v5 over a plain WebSocket) ----
  let ws = null, attempt = 0, retryTimer = 0, pingTimer = 0;
  const connect = () => {
    const s = sess;
    let sock;
    try {
      sock = new WebSocket(String(s.socket_url).replace(/^http/, "ws") + "/socket.io/?EIO=4&transport=websocket");
    } catch {
      return retry();
    }
    ws = sock;
    let limit = 45000;
    const alive = () => {
      clearTimeout(pingTimer);
      pingTimer = setTimeout(() => sock.close(), limit);
    };
    sock.onopen = alive;
    sock.onmessage = ({ data }) => {
      if (typeof data !== "string") return;
      alive();
      if (data[0] === "0") {
        try {
          const o = JSON.parse(data.slice(1));
          limit = o.pingInterval + o.pingTimeout || limit;
        } catch {}
        sock.send("40");
      } else if (data === "2") sock.send("3");
      else if (data === "1" || data.startsWith("41") || data.startsWith("44")) sock.close();
      else if (data.startsWith("40")) {
        sock.send("42" + JSON.stringify(["join-channel", { channel: s.channel, app_key: s.app_key, token: s.token }]));
        attempt = 0;
        loadHistory();
      } else if (data.startsWith("42")) {
        let ev;
        try { ev = JSON.parse(data.slice(2).replace(/^\d+/, "")); } catch { return; }
        if (ev[0] === (s.event || "new_message")) {
          setTyping(false);
          [].concat(ev[1]).forEach(add);
        } else if (ev[0] === "agent_typing") setTyping(!!(ev[1] && ev[1].typing));
        else if (ev[0] === "handoff_state" && ev[1]) showHandoff(ev[1].state);
      }
    };
    sock.onerror = () => sock.close();
    sock.onclose = () => {
      clearTimeout(pingTimer);
      if (ws !== sock) return;
      ws = null;
      setTyping(false);
      retry();
    };
  };

  const retry = () => {
    if (!retryTimer && state !== "refused") retryTimer = setTimeout(start, backoff(attempt++));
  };

  const refuse = () => {
    setState("refused");
    clearTimeout(retryTimer);
    clearTimeout(sendTimer);
    if (ws) {
      ws.onclose = null;
      ws.close();
      ws = null;
    }
    alertEl.textContent = "This chat is not available on this website.";
    form.remove();
    log.remove();
    typing.remove();
    console.warn("Parley: this website is not allowed to use chat channel " + clientId + ".");
  };

  const start = async () => {
    clearTimeout(retryTimer);
    retryTimer = 0;
    if (state === "refused") return;
    const r = await session();
    if (r === "refused") return;
    if (r !== "ok") {
      setState("unavailable");
      return r === "retry" && retry();
    }
    setState("ready");
    if (form.hidden) {
      form.hidden = false;
      if (root.activeElement === panel) ta.focus();
    }
    loadHistory();
    if (!ws) connect();
    flush();
  };

  // ---- sending ----
  let sending = false, sendAttempt = 0, sendTimer = 0;
  const post = async (m) => {
    const fd = new FormData();
    fd.append("contact_id", sess.contact_id);
    fd.append("message", m.text);
    for (const f of m.blobs) fd.append("files[]", f, f.name);
    let res, body;
    try {
      res = await fetch(sess.messages_url, {
        method: "POST",
        headers: { Authorization: "Bearer " + sess.session, "Idempotency-Key": m.idem },
        body: fd,
      });
      body = (await res.json().catch(() => null)) || {};
    } catch {
      return false;
    }
    if (res.ok) {
      const id = body.data && body.data.message_id;
      if (id != null) confirm(m, String(id));
      else {
        m.pending = false;
        render(m);
      }
      // the stored files' own (signed) links replace the local previews
      if (m.blobs.length) loadHistory();
      return true;
    }
    if (res.status === 401 && !m.reauth) {
      m.reauth = true;
      return (await session()) === "ok" ? post(m) : false;
    }
    if (res.status >= 500 || res.status === 429) return false;
    m.pending = false;
    m.error = body.message || "This message could not be sent.";
    render(m);
    return true;
  };

  const flush = async () => {
    if (sending || !sess || state === "refused") return;
    clearTimeout(sendTimer);
    sending = true;
    let m;
    while ((m = list.find((o) => o.pending))) {
      if (!(await post(m))) {
        sendTimer = setTimeout(flush, backoff(sendAttempt++));
        break;
      }
      sendAttempt = 0;
    }
    sending = false;
  };

  let chosen = [];
  const renderChosen = () => {
    chosenEl.replaceChildren(
      ...chosen.map((f, i) =>
        h("li", {}, h("span", { text: f.name }),
          h("button", {
            type: "button", class: "icon", "aria-label": "Remove " + f.name,
            onclick: () => { chosen.splice(i, 1); renderChosen(); ta.focus(); },
          }, "×"))));
    chosenEl.hidden = !chosen.length;
  };
  const grow = () => {
    ta.style.height = "auto";
    ta.style.height = Math.min(ta.scrollHeight + 2, 120) + "px";
  };

  const send = () => {
    const text = ta.value.trim();
    if (!text && !chosen.length) return;
    const blobs = chosen;
    chosen = [];
    const files = blobs.map((f) => ({
      name: f.name, mimetype: f.type, type: /^image\//.test(f.type) ? "image" : "file", url: URL.createObjectURL(f),
    }));
    insert({ key: "tmp:" + uuid(), id: null, idem: uuid(), role: "user", text, blobs, files, pending: true, t: nextT() });
    ta.value = "";
    grow();
    renderChosen();
    flush();
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  ta.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  ta.addEventListener("input", grow);
  fileInput.addEventListener("change", () => {
    chosen = chosen.concat([...fileInput.files]).slice(0, 10);
    fileInput.value = "";
    renderChosen();
  });

  // ---- open / close ----
  const open = (focus = true) => {
    panel.hidden = false;
    bubble.setAttribute("aria-expanded", "true");
    wrap.classList.add("open");
    scrollDown();
    if (focus) (form.isConnected && !form.hidden ? ta : panel).focus();
  };
  const close = () => {
    const inside = panel.contains(root.activeElement);
    panel.hidden = true;
    bubble.setAttribute("aria-expanded", "false");
    wrap.classList.remove("open");
    if (inside) bubble.focus();
  };
  bubble.addEventListener("click", () => (panel.hidden ? open() : close()));
  $(".close").addEventListener("click", close);
  // ---- "Talk to a person": the contact asks for the team (docs/handoff.md); the bridge message arrives as any reply ----
  const human = $(".human");
  // the person button follows the conversation's handoff state: offered while the AI has it
  const HANDOFF_LABELS = { ai: "Talk to a person", waiting: "A person has been asked for", human: "You are chatting with our team" };
  function showHandoff(st) {
    if (!HANDOFF_LABELS[st]) return;
    human.textContent = HANDOFF_LABELS[st];
    human.disabled = st !== "ai";
    human.dataset.handoff = st;
    emit("parley:handoff", { state: st });
  }
  const askForPerson = async (again) => {
    if (!sess) return;
    human.disabled = true;
    const res = await fetch(API + "/api/widget/handoff", { method: "POST", headers: { Authorization: "Bearer " + sess.session } }).catch(() => null);
    if (res && res.status === 401 && !again && (await session()) === "ok") return askForPerson(true);
    const body = res && res.ok ? await res.json().catch(() => null) : null;
    if (body && body.data) showHandoff(body.data.state);
    else human.disabled = false;
  };
  human.addEventListener("click", () => void askForPerson(false));
  panel.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.stopPropagation();
      close();
      bubble.focus();
    }
  });

  window.addEventListener("online", () => {
    if (state === "refused") return;
    if (!ws) start();
    flush();
  });

  window.ParleyWidget = { open: () => open(), close };
  const mount = () => {
    document.body.append(host);
    if (cfg.open === "true") open(false);
    start();
  };
  if (document.body) mount();
  else document.addEventListener("DOMContentLoaded", mount);
})();
