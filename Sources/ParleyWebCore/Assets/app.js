// Parley in the browser: the conversations list, one conversation, the composer, rooms,
// trust and search, all through the control protocol (rpc.js). Every string from the
// daemon goes into the page as text (dom.js), never as HTML.
import { RPC } from "./rpc.js";
import { takeSecretFromFragment, storedSecret, connectionText, showSignInProblem } from "./auth.js";
import { el, clear, time } from "./dom.js";
import { renderTransfer, thumbnailURL, pictureURL, saveFile, convOfTransfer, formatBytes, upload, MAX_UPLOAD_BYTES } from "./files.js";

const PAGE_SIZE = 50;
// A search hit opens with this many messages up to it and this many after it.
const CONTEXT_BEFORE = 20;
const CONTEXT_AFTER = 20;
// Messages read at sign-in (all conversations, newest first) for the sidebar's last-message
// previews and its order by recent activity; later ones come as events.
const RECENT_PAGE = 500;
// Preview of the last message in the sidebar, in characters.
const PREVIEW_CHARS = 60;
// The list is "at the bottom" within this many pixels: new content keeps it there.
const NEAR_BOTTOM_PX = 80;
// Transfers asked for when a conversation opens (files.list is newest first, all
// conversations together); later ones arrive as file.* events.
const TRANSFERS_PAGE = 500;
const $ = (id) => document.getElementById(id);

const state = {
  me: null,
  peers: new Map(),   // fingerprint -> PeerInfo
  rooms: new Map(),   // id -> RoomInfo
  current: null,      // {kind: "peer", fp} | {kind: "room", id}
  olderCursor: null,
  loadingOlder: false,
  replyTo: null,      // MessageInfo being answered
  notify: false,
  transfers: new Map(), // id -> FileTransferInfo
  thumbnails: new Map(), // transfer id -> data: URL, or null (none, or not an image)
  pictures: new Map(),   // transfer id -> blob: URL of a received picture, or null (not one)
  saved: new Set(),      // transfer ids the person saved a copy of (this tab)
  recent: new Map(),  // conversation key -> {time, text}: the sidebar's preview and order
  newerCursor: null,  // a conversation opened around a search hit: newer messages not shown
  atBottom: true,     // the message list is scrolled to its end (new content keeps it there)
  olderKeys: [],      // a contact's previous keys (trust.show), whose history shows above its own
};

const rpc = new RPC({ onEvent, onState });

// ---- conversations ---------------------------------------------------------------

function plural(n, word) { return `${n} ${word}${n === 1 ? "" : "s"}`; }
function peerLabel(p) { return p.nickname || p.name; }
// Two groups (40 bits): one group alone is cheap to grind for a look-alike key.
function shortFp(fp) { return String(fp).split("-").slice(0, 2).join("-"); }
// A name a person could confuse with another (issue 29: "bob " and "bob" look the same in a
// browser) carries a short fingerprint unless the person verified that key.
function withFp(name, fp) {
  const p = state.peers.get(fp);
  return p && p.trust === "verified" ? name : `${name} (${shortFp(fp)})`;
}
function keyOf(conv) { return conv.kind === "peer" ? `peer:${conv.fp}` : `room:${conv.id}`; }
function selector(conv) { return conv.kind === "peer" ? conv.fp : `#${conv.id}`; }
function sameConv(a, b) { return a && b && keyOf(a) === keyOf(b); }

function convOfMessage(m) {
  if (m.room) return { kind: "room", id: m.room.id };
  return { kind: "peer", fp: m.direction === "in" ? m.from : m.to };
}

// What the sidebar says about a peer's key, in plain words, only where it matters to the
// person: a key to approve, a blocked one, one that never connected. (An unverified key is
// the normal case; the conversation's header says how to verify it.)
const TRUST_WORDS = { pending: "new key: approve or block", blocked: "blocked", new: "not connected yet" };
// The header's badge: the same states, and "verified" / "not verified".
const TRUST_BADGE = { verified: "verified", pinned: "not verified", pending: "awaiting approval", blocked: "blocked", new: "not connected yet" };

function preview(m) {
  const text = m.deletedAt ? "message deleted" : m.body.replace(/\s+/g, " ");
  const who = m.direction === "out" ? "You: " : m.room ? `${m.fromName}: ` : "";
  const line = who + text;
  return line.length > PREVIEW_CHARS ? `${line.slice(0, PREVIEW_CHARS - 1)}…` : line;
}

// A message shown, sent or received: the sidebar's preview and order follow it.
function noteActivity(m) {
  const key = keyOf(convOfMessage(m));
  const known = state.recent.get(key);
  if (known && known.time > m.createdAt) return;
  state.recent.set(key, { time: m.createdAt, text: preview(m) });
}

function renderConversations() {
  const list = $("conversations");
  // Rebuilt on every change: keep keyboard focus on the entry that had it.
  const focused = list.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  clear(list);
  const items = [];
  for (const r of state.rooms.values()) {
    if (r.status === "retired") continue;
    const conv = { kind: "room", id: r.id };
    const recent = state.recent.get(keyOf(conv));
    const meta = r.status === "invited" ? "invitation" : !r.member ? "left" : recent ? recent.text : plural(r.members.length, "member");
    items.push({ conv, recent, online: true, label: `#${r.name}`, node: convItem(conv, el("span", { class: "dot room", "aria-hidden": "true" }),
      el("span", { class: "conv-label" }, `#${r.name}`, el("span", { class: "conv-meta", text: meta })), r.unread) });
  }
  for (const p of state.peers.values()) {
    const conv = { kind: "peer", fp: p.fingerprint };
    const recent = state.recent.get(keyOf(conv));
    const meta = [TRUST_WORDS[p.trust], p.status, recent?.text].filter(Boolean).join(" · ");
    items.push({ conv, recent, online: p.online, label: peerLabel(p), node: convItem(conv,
      el("span", { class: `dot${p.online ? " online" : ""}`, title: p.online ? "online" : "offline", "aria-label": p.online ? "online" : "offline" }),
      el("span", { class: "conv-label" },
        p.nameClash ? el("span", { class: "clash", title: "another key uses a name like this one", text: `⚠ ` }) : null,
        el("span", { class: "name", text: peerLabel(p) }),
        // Unverified: a short fingerprint beside the name, so two look-alike names differ.
        p.trust !== "verified" ? el("span", { class: "fp", text: ` ${shortFp(p.fingerprint)}` }) : "",
        p.trust === "verified" ? el("span", { class: "verified-mark", title: "verified", "aria-label": "verified", text: " ✓" }) : null,
        el("span", { class: "conv-meta", text: meta })),
      p.unread) });
  }
  // Recent activity first (like any messenger); conversations with none by online, then name.
  items.sort((a, b) => ((b.recent?.time ?? -1) - (a.recent?.time ?? -1)) || (b.online - a.online) || a.label.localeCompare(b.label));
  for (const item of items) list.append(item.node);
  if (focused) list.querySelector(`li[data-key="${CSS.escape(focused)}"]`)?.focus();
  updateTitle();
}

// The tab's title counts unread messages, so a tab in the background shows there is news.
function updateTitle() {
  let unread = 0;
  for (const p of state.peers.values()) unread += p.unread || 0;
  for (const r of state.rooms.values()) unread += r.unread || 0;
  document.title = unread > 0 ? `(${unread}) Parley` : "Parley";
}

// Screen readers hear new messages (this live region), not the whole list again.
function announce(m) {
  $("announcer").textContent = `${m.room ? `${m.fromName} in #${m.room.name}` : m.fromName}: ${m.deletedAt ? "message deleted" : m.body}`;
}

function convItem(conv, dot, label, unread) {
  return el("li", {
    role: "option", tabindex: "0", class: "conv", "aria-selected": sameConv(conv, state.current) ? "true" : "false",
    dataset: { key: keyOf(conv) },
    onclick: () => openConversation(conv),
    onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openConversation(conv); } },
  }, dot, label, unread > 0 ? el("span", { class: "unread", text: String(unread), "aria-label": `${unread} unread` }) : el("span"));
}

// The newest messages of all conversations: the sidebar's previews and order.
async function refreshRecent() {
  const r = await rpc.call("messages.list", { limit: RECENT_PAGE });
  for (const m of r.messages) noteActivity(m);
  renderConversations();
}

async function refreshPeers() {
  const r = await rpc.call("peers.list");
  state.peers = new Map(r.peers.map((p) => [p.fingerprint, p]));
  renderConversations();
  renderHeader();
}

async function refreshRooms() {
  const r = await rpc.call("rooms.list");
  state.rooms = new Map(r.rooms.map((room) => [room.id, room]));
  renderConversations();
  renderHeader();
}

// A burst of changes in rooms not open (reactions, edits, marks) reads the rooms once.
const ROOMS_REFRESH_MS = 500;
let roomsRefreshTimer = null;
function refreshRoomsSoon() {
  if (roomsRefreshTimer) return;
  roomsRefreshTimer = setTimeout(() => { roomsRefreshTimer = null; refreshRooms().catch(() => {}); }, ROOMS_REFRESH_MS);
}

// ---- one conversation ---------------------------------------------------------------

// `around`: a search hit, shown in its place with the messages before and after it.
async function openConversation(conv, around = null) {
  state.current = conv;
  state.olderCursor = null;
  state.olderPeer = null;
  state.olderKeys = [];
  state.newerCursor = null;
  $("newer").hidden = true;
  state.replyTo = null;
  $("app").classList.add("in-conversation");
  $("reply-to").hidden = true;
  renderConversations();
  renderHeader();
  const list = clear($("messages"));
  const [page, after, files] = await Promise.all([
    rpc.call("messages.list", around
      ? { peer: selector(conv), before: around.cursor + 1, limit: CONTEXT_BEFORE }
      : { peer: selector(conv), limit: PAGE_SIZE }),
    around ? rpc.call("messages.list", { peer: selector(conv), after: around.cursor, limit: CONTEXT_AFTER }) : null,
    rpc.call("files.list", { limit: TRANSFERS_PAGE }).catch(() => ({ transfers: [] })),
  ]);
  if (!sameConv(conv, state.current)) return;
  // A contact that moved to a new key (trust.replace) keeps its history: the previous
  // keys' messages show above this key's, each under a line that says so.
  if (conv.kind === "peer" && !around) {
    const shownKey = await rpc.call("trust.show", { peer: conv.fp }).catch(() => null);
    if (!sameConv(conv, state.current)) return;
    state.olderKeys = (shownKey?.previousKeys || []).map((k) => k.fingerprint);
  }
  const shown = [...page.messages, ...(after ? after.messages : [])];
  for (const m of shown) list.append(renderMessage(m));
  state.olderCursor = page.olderCursor;
  state.newerCursor = after ? after.newerCursor : null;
  $("newer").hidden = state.newerCursor === null;
  for (const t of files.transfers) state.transfers.set(t.id, t);
  // Transfers of this conversation from the oldest message shown on (all of them once the
  // whole history is shown) up to the newest shown, each in its place by time.
  const oldest = shown.length && page.olderCursor !== null ? shown[0].createdAt : -Infinity;
  const newest = state.newerCursor !== null && shown.length ? shown[shown.length - 1].createdAt : Infinity;
  for (const t of files.transfers) {
    if (sameConv(convOfTransfer(t), conv) && t.createdAt >= oldest && t.createdAt <= newest) placeTransfer(t);
  }
  const hit = around && list.querySelector(`li[data-id="${CSS.escape(around.id)}"]`);
  if (hit) {
    hit.classList.add("hit");
    hit.setAttribute("aria-current", "true");
    hit.scrollIntoView({ block: "center" });
    state.atBottom = false;
  } else {
    list.scrollTop = list.scrollHeight;
    state.atBottom = true;
  }
  $("composer-input").focus();
  markRead();
  if (state.olderCursor === null && state.olderKeys.length) loadOlder();
}

async function loadOlder() {
  const conv = state.current;
  if (!conv || state.loadingOlder) return;
  // This key's history is all shown: go on with the previous key's, newest first.
  const nextKey = state.olderCursor === null ? state.olderKeys[0] : null;
  if (state.olderCursor === null && !nextKey) return;
  state.loadingOlder = true;
  try {
    const list = $("messages");
    const page = nextKey
      ? await rpc.call("messages.list", { peer: nextKey, limit: PAGE_SIZE })
      : await rpc.call("messages.list", { peer: state.olderPeer || selector(conv), before: state.olderCursor, limit: PAGE_SIZE });
    if (!sameConv(conv, state.current)) return;
    const before = list.scrollHeight;
    let first = list.querySelector("li.msg:not(.file), li.key-divider") || list.firstChild;
    if (nextKey) {
      state.olderKeys.shift();
      state.olderPeer = nextKey;
      const divider = el("li", { class: "key-divider", role: "separator", dataset: { time: String(page.messages[page.messages.length - 1]?.createdAt ?? 0) } },
        `Above: messages with the previous key (${shortFp(nextKey)}), before it was replaced by this one.`);
      list.insertBefore(divider, first);
      first = divider;
    }
    const previousOldest = Number(first?.dataset.time ?? Infinity);
    for (const m of page.messages) list.insertBefore(renderMessage(m), first);
    const newOldest = page.messages.length && page.olderCursor !== null ? page.messages[0].createdAt : -Infinity;
    for (const t of state.transfers.values()) {
      if (sameConv(convOfTransfer(t), conv) && t.createdAt >= newOldest && t.createdAt < previousOldest) placeTransfer(t);
    }
    // Keep what the person was reading where it was.
    list.scrollTop += list.scrollHeight - before;
    state.olderCursor = page.olderCursor;
  } finally {
    state.loadingOlder = false;
  }
}

function markRead() {
  const conv = state.current;
  if (!conv || document.hidden) return;
  const unread = conv.kind === "peer" ? state.peers.get(conv.fp)?.unread : state.rooms.get(conv.id)?.unread;
  rpc.call("messages.mark_read", { peer: selector(conv) }).then(() => {
    if (conv.kind === "peer" && state.peers.has(conv.fp)) state.peers.get(conv.fp).unread = 0;
    if (conv.kind === "room" && state.rooms.has(conv.id)) state.rooms.get(conv.id).unread = 0;
    if (unread) renderConversations();
  }).catch(() => {});
}

function tick(m) {
  if (m.direction !== "out") return null;
  if (m.readAt) return el("span", { class: "tick read", title: `read ${time(m.readAt)}`, text: "✓✓" });
  if (m.state === "delivered") return el("span", { class: "tick delivered", title: "delivered", text: "✓" });
  if (m.state === "partial") {
    // A room message some members hold (by the author's delivery or another member's sync).
    const text = holdersText(m);
    return el("span", { class: "tick partial", title: text, text: `✓ ${text}` });
  }
  return el("span", { class: "tick queued", title: "queued", text: "🕓" });
}

// "carol has it (1 of 2)", "carol, bob and 3 others have it (5 of 9)".
function holdersText(m) {
  const d = m.roomDelivery;
  if (!d || !d.heldBy.length) return "";
  const names = d.heldBy.slice(0, 3).map((h) => h.name);
  const others = d.heldBy.length - names.length;
  const who = names.join(", ") + (others > 0 ? ` and ${others} other${others === 1 ? "" : "s"}` : "");
  return `${who} ${d.heldBy.length === 1 ? "has" : "have"} it (${d.heldBy.length} of ${d.members})`;
}

function renderMessage(m) {
  const mine = m.direction === "out";
  const body = m.deletedAt
    ? el("div", { class: "body deleted", text: "message deleted" })
    : el("div", { class: "body", text: m.body });
  const quote = m.replyTo ? el("div", { class: "quote" },
    m.replyTo.fromName ? `${m.replyTo.fromName}: ` : "", m.replyTo.deleted ? "(deleted)" : (m.replyTo.excerpt ?? "(not here)")) : null;
  const reactions = (m.reactions || []).length ? el("div", { class: "reactions" },
    m.reactions.map((r) => el("button", {
      type: "button", class: r.mine ? "mine" : "", title: r.fromNames.join(", "),
      onclick: () => react(m, r.reaction, r.mine),
    }, r.reaction, ` ${r.fromNames.length}`))) : null;
  // Written after its author's removal (a removed member writing on, taken before the
  // removal arrived): shown, never hidden (the daemon withdraws nothing), but marked, and
  // nothing to answer; the mark goes by itself if the removal turns out void.
  const afterRemoval = m.room?.afterRemoval === true;
  const removedNote = afterRemoval
    ? el("div", { class: "removed-note", text: `sent after ${m.fromName} was removed: not part of the room's history` })
    : null;
  const actions = m.deletedAt || afterRemoval ? null : el("div", { class: "actions" },
    el("button", { type: "button", onclick: () => startReply(m), text: "Reply" }),
    el("button", { type: "button", onclick: () => askReaction(m), text: "React" }),
    mine ? el("button", { type: "button", onclick: () => edit(m), text: "Edit" }) : null,
    mine ? el("button", { type: "button", onclick: () => remove(m), text: "Delete" }) : null);
  return el("li", { class: `msg ${mine ? "out" : "in"}${afterRemoval ? " after-removal" : ""}`, tabindex: "-1", dataset: { id: m.id, cursor: m.cursor, time: String(m.createdAt) } },
    !mine ? el("div", { class: "author", text: m.room ? withFp(m.fromName, m.from) : m.fromName }) : null,
    removedNote, quote, body, reactions,
    el("div", { class: "meta" }, time(m.createdAt), m.editedAt ? " · edited" : "", " ", tick(m)),
    actions);
}

function replaceMessage(m) {
  const old = $("messages").querySelector(`li[data-id="${CSS.escape(m.id)}"]`);
  if (old) old.replaceWith(renderMessage(m));
}

function nearBottom(list) { return list.scrollHeight - list.scrollTop - list.clientHeight < NEAR_BOTTOM_PX; }

function appendMessage(m) {
  const list = $("messages");
  if (list.querySelector(`li[data-id="${CSS.escape(m.id)}"]`)) return replaceMessage(m);
  // Opened around a search hit with newer messages not shown: this one does not follow
  // what is on screen; "Newest messages" shows it.
  if (state.newerCursor !== null) return;
  const nearBottom = state.atBottom;
  list.append(renderMessage(m));
  if (nearBottom || m.direction === "out") list.scrollTop = list.scrollHeight;
}

// ---- attachments (file transfers) --------------------------------------------------------

function transferLine(t) {
  return renderTransfer(t, {
    actions: { accept: (x) => fileCall("files.accept", x), reject: (x) => fileCall("files.reject", x),
      cancel: (x) => fileCall("files.cancel", x), save: saveTransfer },
    thumbnail: state.thumbnails.get(t.id) || null,
    picture: state.pictures.get(t.id) || null,
    saved: state.saved.has(t.id),
    inRoom: !!t.room,
  });
}

// Shows a transfer of the current conversation: replaces its line, or puts a new one
// where its time puts it among the messages.
function placeTransfer(t) {
  const list = $("messages");
  const line = transferLine(t);
  const old = list.querySelector(`li[data-transfer="${CSS.escape(t.id)}"]`);
  // A line that grows (a thumbnail arrived) must not push the newest message out of view.
  const stick = state.atBottom;
  if (old) {
    old.replaceWith(line);
    if (stick) list.scrollTop = list.scrollHeight;
    loadPicture(t);
    return;
  }
  const nearBottom = stick;
  let after = list.lastElementChild;
  while (after && Number(after.dataset.time) > t.createdAt) after = after.previousElementSibling;
  list.insertBefore(line, after ? after.nextSibling : list.firstChild);
  if (line === list.lastElementChild && (nearBottom || t.direction === "out")) list.scrollTop = list.scrollHeight;
  loadThumbnail(t);
  loadPicture(t);
}

// A received file that may be a picture: fetched once (files.js pictureURL decides by its
// bytes), then its line shows it; anything else is remembered as "not a picture".
async function loadPicture(t) {
  if (t.direction !== "in" || t.state !== "completed" || state.pictures.has(t.id)) return;
  state.pictures.set(t.id, null);
  let url = null;
  try { url = await pictureURL(t); } catch { url = null; }
  if (!url) return;
  state.pictures.set(t.id, url);
  const current = state.transfers.get(t.id);
  if (current && sameConv(convOfTransfer(current), state.current)) placeTransfer(current);
}

async function saveTransfer(t) {
  try {
    await saveFile(t);
    state.saved.add(t.id);
    const current = state.transfers.get(t.id);
    if (current && sameConv(convOfTransfer(current), state.current)) placeTransfer(current);
  } catch (e) { showError(e); }
}

// A transfer with a thumbnail: its bytes once (files.thumbnail), shown only if they are
// a JPEG or PNG (files.js thumbnailURL); anything else is remembered as "none".
async function loadThumbnail(t) {
  if (!t.thumbnailBytes || state.thumbnails.has(t.id)) return;
  state.thumbnails.set(t.id, null);
  let url = null;
  try { url = thumbnailURL(await rpc.call("files.thumbnail", { id: t.id })); } catch { url = null; }
  if (!url) return;
  state.thumbnails.set(t.id, url);
  const current = state.transfers.get(t.id);
  if (current && sameConv(convOfTransfer(current), state.current)) placeTransfer(current);
}

async function fileCall(method, t) {
  try {
    const res = await rpc.call(method, { id: t.id });
    onTransfer(res.transfer);
  } catch (e) { showError(e); }
}

function onTransfer(t) {
  const known = state.transfers.get(t.id);
  // Events and answers can cross: never go back from a later state to an earlier one.
  if (known && known.updatedAt > t.updatedAt) return;
  state.transfers.set(t.id, t);
  if (sameConv(convOfTransfer(t), state.current)) placeTransfer(t);
}

// Files chosen or dropped: each is confirmed with an optional caption, then uploaded with
// a progress line under the messages; the transfer's own line appears when the daemon
// offered it.
async function attachFiles(files) {
  const conv = state.current;
  if (!conv || $("send").disabled) return;
  for (const file of files) {
    if (file.size > MAX_UPLOAD_BYTES) {
      showUploadError(file.name, `The file is too large to send from the browser (${formatBytes(file.size)}; at most ${formatBytes(MAX_UPLOAD_BYTES)}). Send it with \`parley send PEER --attach FILE\` instead.`);
      continue;
    }
    const values = await ask(`Send ${file.name} (${formatBytes(file.size)})`, [{ name: "caption", label: "Caption (optional)" }]);
    if (!values) continue;
    startUpload(file, conv, values.caption.trim());
  }
}

function startUpload(file, conv, caption) {
  const box = $("attachments");
  const bar = el("progress", { max: String(Math.max(file.size, 1)), value: "0" });
  const label = el("span", { class: "progress-text", text: "0%" });
  let job = null;
  const line = el("div", { class: "upload" }, el("span", { class: "file-name", text: file.name }), " ", bar, " ", label, " ",
    el("button", { type: "button", class: "upload-cancel", onclick: () => job && job.abort(), text: "Cancel" }));
  box.append(line);
  box.hidden = false;
  job = upload(file, selector(conv), caption, (sent, total) => {
    bar.value = sent;
    label.textContent = `${total ? Math.floor((100 * sent) / total) : 0}% of ${formatBytes(total)}`;
  });
  job.done.then((res) => {
    for (const t of res.transfers) onTransfer(t);
  }).catch((e) => {
    if (!e.aborted) showUploadError(file.name, e.message);
  }).finally(() => {
    line.remove();
    box.hidden = box.childElementCount === 0;
  });
}

function showUploadError(name, message) {
  const box = $("attachments");
  const line = el("div", { class: "upload error", role: "alert" }, el("strong", { text: `${name}: ` }), message, " ",
    el("button", { type: "button", onclick: () => { line.remove(); box.hidden = box.childElementCount === 0; }, text: "Dismiss" }));
  box.append(line);
  box.hidden = false;
}

// ---- header, warnings, verification, rooms --------------------------------------------

function renderHeader() {
  const conv = state.current;
  const actions = clear($("conv-actions"));
  const warning = $("warning");
  const roomPanel = $("room-panel");
  warning.hidden = true;
  clear(warning);
  roomPanel.hidden = true;
  const input = $("composer-input");
  if (!conv) return;
  let canSend = true;
  if (conv.kind === "peer") {
    const p = state.peers.get(conv.fp);
    if (!p) return;
    $("conv-name").textContent = p.trust === "verified" ? peerLabel(p) : `${peerLabel(p)} (${shortFp(p.fingerprint)})`;
    const trust = $("conv-trust");
    trust.textContent = TRUST_BADGE[p.trust] || p.trust;
    trust.className = `badge ${p.trust}`;
    $("conv-sub").textContent = [p.online ? "online" : "offline", p.status].filter(Boolean).join(" · ");
    actions.append(el("button", { type: "button", id: "verify", onclick: () => openConfirm({ do: "verify", peer: p.fingerprint }), text: p.trust === "verified" ? "Safety number" : "Verify" }));
    if (p.nameClash) {
      const others = (p.nameClash.with || []).map((w) => `${w.name} (${shortFp(w.fingerprint)}, ${w.trust})`).join(", ");
      warning.append(
        el("strong", { text: "⚠ Name clash: " }),
        p.nameClash.kind === "sameName"
          ? `another key also calls itself “${p.name}”`
          : `“${p.name}” looks like another name`,
        others ? ` — ${others}` : " — your own name",
        ". It may be someone else, or the same person with a new key (a key change). Compare the safety number in person before you trust it.",
        el("button", { type: "button", class: "compare", onclick: () => openConfirm({ do: "verify", peer: p.fingerprint }), text: "Compare safety number" }));
      // The same person reinstalled: move the old key's conversation here, in the
      // confirmation window, with the number read from their new device.
      for (const w of p.nameClash.with || []) {
        if (w.trust !== "pinned" && w.trust !== "verified") continue;
        warning.append(el("button", { type: "button", class: "move-key", dataset: { old: w.fingerprint },
          onclick: () => openConfirm({ do: "replace", old: w.fingerprint, new: p.fingerprint }),
          text: `${w.name} (${shortFp(w.fingerprint)}) reinstalled? Move to this key…` }));
      }
      warning.hidden = false;
    } else if (p.trust === "pending" || p.trust === "blocked" || p.trust === "new") {
      warning.append(el("strong", { text: "⚠ " }),
        p.trust === "pending" ? "This key is waiting for your approval: nothing is exchanged until you accept it."
          : p.trust === "blocked" ? "You blocked this key." : "This key has not connected yet.");
      warning.hidden = false;
    }
    if (p.trust === "pending") {
      warning.append(el("button", { type: "button", id: "accept-key", onclick: () => openConfirm({ do: "accept", peer: p.fingerprint }), text: "Accept…" }),
        el("button", { type: "button", onclick: () => trustCall("trust.block", p), text: "Block" }));
      canSend = false;
    }
    if (p.trust === "blocked") {
      warning.append(el("button", { type: "button", id: "unblock-key", onclick: () => openConfirm({ do: "unblock", peer: p.fingerprint }), text: "Unblock…" }));
      canSend = false;
    } else if (p.trust !== "pending") {
      actions.append(el("button", { type: "button", onclick: () => trustCall("trust.block", p), text: "Block" }));
    }
  } else {
    const r = state.rooms.get(conv.id);
    if (!r) return;
    $("conv-name").textContent = `#${r.name}`;
    const trust = $("conv-trust");
    trust.textContent = r.status;
    trust.className = "badge";
    $("conv-sub").textContent = `${plural(r.members.length, "member")}${r.role ? ` · you are ${r.role}` : ""}`;
    renderRoomPanel(r);
    canSend = r.status === "joined";
  }
  input.disabled = !canSend;
  $("send").disabled = !canSend;
  $("attach").disabled = !canSend;
}

function renderRoomPanel(r) {
  const panel = clear($("room-panel"));
  panel.hidden = false;
  if (r.status === "invited") {
    panel.append(`You are invited to #${r.name}.`, " ",
      el("button", { type: "button", id: "room-accept", onclick: () => roomCall("rooms.accept", { room: `#${r.id}` }), text: "Accept" }), " ",
      el("button", { type: "button", onclick: () => roomCall("rooms.decline", { room: `#${r.id}` }), text: "Decline" }));
    return;
  }
  const canRemove = r.role === "owner" || r.role === "admin";
  panel.append(el("ul", { class: "members", "aria-label": "Members" }, r.members.map((m) =>
    el("li", {}, m.you ? `${m.name} (you)` : m.name, m.joined ? "" : " · invited", ` · ${m.role}`,
      canRemove && !m.you ? el("button", { type: "button", title: `Remove ${m.name}`, "aria-label": `Remove ${m.name}`,
        onclick: () => roomCall("rooms.remove", { room: `#${r.id}`, peer: m.fingerprint }), text: "×" }) : null))));
  if (!r.member) return;
  const memberFps = new Set(r.members.map((m) => m.fingerprint));
  const candidates = [...state.peers.values()].filter((p) => !memberFps.has(p.fingerprint) && p.trust !== "blocked");
  const select = el("select", { id: "room-add-select", "aria-label": "Peer to add" },
    candidates.map((p) => el("option", { value: p.fingerprint, text: `${peerLabel(p)} (${shortFp(p.fingerprint)})` })));
  panel.append(select, " ",
    el("button", { type: "button", disabled: candidates.length === 0, onclick: () => roomCall("rooms.add", { room: `#${r.id}`, peer: select.value }), text: "Add" }), " ",
    el("button", { type: "button", onclick: () => roomCall("rooms.leave", { room: `#${r.id}` }), text: "Leave room" }));
}

async function roomCall(method, params) {
  try {
    const res = await rpc.call(method, params);
    state.rooms.set(res.room.id, res.room);
    renderConversations();
    renderHeader();
  } catch (e) { showError(e); }
}

async function trustCall(method, p) {
  try {
    const res = await rpc.call(method, { peer: p.fingerprint });
    state.peers.set(res.peer.fingerprint, res.peer);
    renderConversations();
    renderHeader();
  } catch (e) { showError(e); }
}

// The confirmation window (confirm.js): another origin (localhost), so nothing in this
// page can fill it in or click in it. Everything that gives a key trust or reach happens
// there (verify, accept, unblock, move to a new key, add by address); what takes trust
// away (Block) stays here. It gets this run's secret and the task in its fragment.
function openConfirm(task) {
  const secret = storedSecret();
  if (!secret) return;
  const fragment = new URLSearchParams({ k: secret, ...task });
  window.open(`http://localhost:${location.port}/confirm.html#${fragment}`, "_blank", "noopener");
}

// ---- composer and message actions -----------------------------------------------------

async function send() {
  const input = $("composer-input");
  const body = input.value;
  const conv = state.current;
  if (!conv || body.trim() === "") return;
  try {
    const res = state.replyTo
      ? await rpc.call("messages.reply", { message: state.replyTo.id, body })
      : await rpc.call("messages.send", { to: selector(conv), body });
    input.value = "";
    state.replyTo = null;
    $("reply-to").hidden = true;
    noteActivity(res.message);
    renderConversations();
    if (state.newerCursor !== null) return openConversation(state.current);
    if (sameConv(convOfMessage(res.message), state.current)) appendMessage(res.message);
  } catch (e) { showError(e); }
}

function startReply(m) {
  state.replyTo = m;
  const box = clear($("reply-to"));
  box.append(`Replying to ${m.direction === "out" ? "yourself" : m.fromName}: `, m.body.slice(0, 80), " ",
    el("button", { type: "button", onclick: () => { state.replyTo = null; box.hidden = true; }, text: "Cancel" }));
  box.hidden = false;
  $("composer-input").focus();
}

async function react(m, reaction, remove) {
  try { replaceMessage((await rpc.call("messages.react", { message: m.id, reaction, remove: !!remove })).message); }
  catch (e) { showError(e); }
}

async function askReaction(m) {
  const values = await ask("React", [{ name: "reaction", label: "Reaction (an emoji)", value: "👍" }]);
  if (values) react(m, values.reaction, false);
}

async function edit(m) {
  const values = await ask("Edit message", [{ name: "body", label: "Text", value: m.body, multiline: true }]);
  if (!values) return;
  try { replaceMessage((await rpc.call("messages.edit", { message: m.id, body: values.body })).message); }
  catch (e) { showError(e); }
}

async function remove(m) {
  const values = await ask("Delete this message for everyone?", []);
  if (!values) return;
  try { replaceMessage((await rpc.call("messages.delete", { message: m.id })).message); }
  catch (e) { showError(e); }
}

// A small modal form (the <dialog> element: focus is trapped, Escape cancels).
function ask(title, fields, extra) {
  const dialog = $("dialog");
  const form = clear($("dialog-form"));
  const inputs = {};
  form.append(el("strong", { text: title }));
  for (const f of fields) {
    const input = f.multiline ? el("textarea", { rows: 4, name: f.name }) : el("input", { name: f.name, autocomplete: "off", id: `dialog-${f.name}` });
    input.value = f.value || "";
    inputs[f.name] = input;
    form.append(el("label", {}, f.label, el("br"), input));
  }
  if (extra) form.append(extra);
  form.append(el("div", { class: "row" },
    el("button", { value: "cancel", type: "submit", formnovalidate: true, text: "Cancel" }),
    el("button", { value: "ok", type: "submit", id: "dialog-ok", text: "OK" })));
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      if (dialog.returnValue !== "ok") return resolve(null);
      const values = {};
      for (const [k, input] of Object.entries(inputs)) values[k] = input.value;
      resolve(values);
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

async function newRoom() {
  const boxes = [...state.peers.values()].filter((p) => p.trust !== "blocked" && p.trust !== "pending").map((p) => {
    const box = el("input", { type: "checkbox", value: p.fingerprint });
    return { box, label: el("label", {}, box, ` ${peerLabel(p)} (${shortFp(p.fingerprint)})`) };
  });
  const values = await ask("New room", [{ name: "name", label: "Name" }],
    el("fieldset", {}, el("legend", { text: "Invite" }), boxes.map((b) => el("div", {}, b.label))));
  if (!values || !values.name.trim()) return;
  try {
    const res = await rpc.call("rooms.create", { name: values.name.trim(), members: boxes.filter((b) => b.box.checked).map((b) => b.box.value) });
    state.rooms.set(res.room.id, res.room);
    renderConversations();
    openConversation({ kind: "room", id: res.room.id });
  } catch (e) { showError(e); }
}

function showError(e) {
  const warning = $("warning");
  clear(warning).append(el("strong", { text: "Error: " }), e.message || String(e));
  warning.hidden = false;
}

// ---- search -----------------------------------------------------------------------------

async function search(query) {
  const box = $("search-results");
  const hits = clear($("search-hits"));
  box.hidden = false;
  try {
    const res = await rpc.call("messages.search", { query, limit: 50 });
    $("search-summary").textContent = `${res.hits.length} found`;
    for (const h of res.hits) {
      const m = h.message;
      hits.append(el("li", { tabindex: "0", onclick: () => openConversation(convOfMessage(m), m),
        onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openConversation(convOfMessage(m), m); } } },
        el("span", { class: "conv-meta", text: `${m.fromName} → ${m.toName} · ${time(m.createdAt)}` }),
        el("span", { text: h.snippet })));
    }
  } catch (e) { $("search-summary").textContent = e.message; }
}

// ---- live events ------------------------------------------------------------------------

function onEvent(method, params) {
  switch (method) {
    case "message.received": {
      const m = params.message;
      const conv = convOfMessage(m);
      noteActivity(m);
      if (m.direction === "in") announce(m);
      if (sameConv(conv, state.current)) {
        appendMessage(m);
        markRead();
      } else if (m.room && state.rooms.has(m.room.id)) {
        state.rooms.get(m.room.id).unread += 1;
      } else if (!m.room && state.peers.has(m.from)) {
        state.peers.get(m.from).unread += 1;
      }
      renderConversations();
      if (state.notify && (document.hidden || !sameConv(conv, state.current))) {
        const n = new Notification(m.room ? `${m.fromName} in #${m.room.name}` : m.fromName, { body: m.body.slice(0, 200), tag: m.id });
        n.onclick = () => { window.focus(); openConversation(conv); };
      }
      break;
    }
    case "message.updated":
      if (sameConv(convOfMessage(params.message), state.current)) replaceMessage(params.message);
      // A mark "sent after removal" came or went: the room's unread count follows it.
      // (Any change of such a message asks, at most once per ROOMS_REFRESH_MS.)
      else if (params.message.room && params.message.direction === "in") refreshRoomsSoon();
      break;
    case "message.delivered":
    case "message.read": {
      const li = $("messages").querySelector(`li[data-id="${CSS.escape(String(params.id))}"] .tick`);
      if (li) {
        const read = method === "message.read";
        li.className = `tick ${read ? "read" : "delivered"}`;
        li.textContent = read ? "✓✓" : "✓";
        li.title = read ? `read ${time(params.readAt)}` : "delivered";
      }
      break;
    }
    case "peer.online":
    case "peer.offline":
      state.peers.set(params.peer.fingerprint, params.peer);
      renderConversations();
      renderHeader();
      break;
    case "peer.new":
      refreshPeers().catch(() => {});
      break;
    case "peer.status": {
      const p = state.peers.get(params.fingerprint);
      if (p) { p.status = params.status || null; renderConversations(); renderHeader(); }
      break;
    }
    case "room.updated":
      state.rooms.set(params.room.id, params.room);
      renderConversations();
      renderHeader();
      break;
    case "file.offered":
    case "file.progress":
    case "file.completed":
    case "file.failed":
    case "file.cancelled": {
      const t = params.transfer;
      if (!t || typeof t.id !== "string") break;
      onTransfer(t);
      if (method === "file.offered" && t.direction === "in" && state.notify && (document.hidden || !sameConv(convOfTransfer(t), state.current))) {
        const n = new Notification(`${t.peerName} offers a file`, { body: `${t.name} (${formatBytes(t.size)})`, tag: t.id });
        n.onclick = () => { window.focus(); openConversation(convOfTransfer(t)); };
      }
      break;
    }
    default:
      // Unknown notifications are ignored (docs/CONTROL.md).
      break;
  }
}

async function onState(s, reason) {
  $("connection").textContent = connectionText(s, reason);
  document.body.dataset.connection = s;
  if (s === "signed-out" || s === "refused") return showSignInProblem(s);
  if (s !== "open") return;
  try {
    try {
      await rpc.call("messages.subscribe", rpc.lastEventId !== null ? { since: rpc.lastEventId } : {});
    } catch (e) {
      await rpc.call("messages.subscribe", {});
    }
    state.me = await rpc.call("node.whoami");
    $("me-name").textContent = state.me.name;
    $("me-name").title = state.me.fingerprint;
    await Promise.all([refreshPeers(), refreshRooms()]);
    await refreshRecent().catch(() => {});
    if (state.current) openConversation(state.current);
    document.body.dataset.ready = "true";
  } catch (e) { showError(e); }
}

// ---- wiring -------------------------------------------------------------------------------

$("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
$("composer-input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
});
$("messages").addEventListener("scroll", () => {
  state.atBottom = nearBottom($("messages"));
  if ($("messages").scrollTop < 60) loadOlder();
});
// A picture that finishes loading after the scroll (a thumbnail) keeps the newest
// message in view when the list was at its end. (load does not bubble: capture it.)
// (A scroll event can come after the picture grew the list: "at the end before it grew"
// also counts.)
$("messages").addEventListener("load", (e) => {
  if (e.target.tagName !== "IMG") return;
  const list = $("messages");
  const gap = list.scrollHeight - list.scrollTop - list.clientHeight;
  if (state.atBottom || gap - e.target.offsetHeight < NEAR_BOTTOM_PX) {
    list.scrollTop = list.scrollHeight;
    state.atBottom = true;
  }
}, true);
// Keyboard: in the message list, Up / Down move between messages (the newest first from
// the list itself), Home / End to the first / last; a focused message shows its actions,
// which Tab then reaches.
$("messages").addEventListener("keydown", (e) => {
  if (!["ArrowUp", "ArrowDown", "Home", "End"].includes(e.key)) return;
  const items = [...$("messages").querySelectorAll(":scope > li.msg")];
  if (!items.length) return;
  const at = items.indexOf(document.activeElement);
  let next;
  if (e.key === "Home") next = 0;
  else if (e.key === "End") next = items.length - 1;
  else if (at < 0) next = items.length - 1;
  else next = Math.max(0, Math.min(items.length - 1, at + (e.key === "ArrowUp" ? -1 : 1)));
  e.preventDefault();
  if (!items[next].hasAttribute("tabindex")) items[next].setAttribute("tabindex", "-1");
  items[next].focus();
});
$("newer").addEventListener("click", () => { if (state.current) openConversation(state.current); });
$("search-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const q = $("search-input").value.trim();
  if (q) search(q);
});
$("search-close").addEventListener("click", () => { $("search-results").hidden = true; });
$("status-input").addEventListener("keydown", async (e) => {
  if (e.key !== "Enter") return;
  try { await rpc.call("node.set_status", { status: $("status-input").value }); } catch (err) { showError(err); }
});
$("new-room").addEventListener("click", newRoom);
$("add-by-address").addEventListener("click", () => openConfirm({ do: "connect" }));
// Back from the confirmation window: a key it moved or a contact it added shows at once.
window.addEventListener("focus", () => { if (rpc.signedIn) refreshPeers().catch(() => {}); });
$("attach").addEventListener("click", () => $("file-input").click());
$("file-input").addEventListener("change", (e) => {
  const files = [...e.target.files];
  e.target.value = "";
  attachFiles(files);
});
// Dropping files anywhere on the conversation attaches them.
$("conversation").addEventListener("dragover", (e) => {
  if (!state.current || ![...(e.dataTransfer?.types || [])].includes("Files")) return;
  e.preventDefault();
  $("conversation").classList.add("dropping");
});
$("conversation").addEventListener("dragleave", (e) => {
  if (e.target === $("conversation")) $("conversation").classList.remove("dropping");
});
$("conversation").addEventListener("drop", (e) => {
  $("conversation").classList.remove("dropping");
  if (!state.current || !e.dataTransfer?.files?.length) return;
  e.preventDefault();
  attachFiles([...e.dataTransfer.files]);
});
$("back").addEventListener("click", () => { $("app").classList.remove("in-conversation"); });
$("enable-notifications").addEventListener("click", async () => {
  if (!("Notification" in window)) return;
  state.notify = (await Notification.requestPermission()) === "granted";
  $("enable-notifications").textContent = state.notify ? "Notifications on" : "Notifications blocked";
});
if ("Notification" in window && Notification.permission === "granted") state.notify = true;
document.addEventListener("visibilitychange", () => { if (!document.hidden) markRead(); });
document.addEventListener("keydown", (e) => {
  // Ctrl+K / "/" focus search; Escape leaves a conversation on a narrow window.
  if ((e.ctrlKey && e.key === "k") || (e.key === "/" && !/INPUT|TEXTAREA/.test(document.activeElement.tagName))) {
    e.preventDefault();
    $("search-input").focus();
  }
});

takeSecretFromFragment();
rpc.connect();
