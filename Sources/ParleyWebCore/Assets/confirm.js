// The confirmation window (docs/WEB.md "Changing who you talk to"). The chat opens it on
// http://localhost:PORT, another origin than its own (http://127.0.0.1:PORT), with the
// run's secret and what to do in the fragment. A script that got into the chat can open
// this window but cannot read it, type into it or send its requests; and what it does
// needs what only the person can type:
// - "Add by address": the address the person types (peers.connect). Whoever answers
//   there becomes a contact like any key found on the network (not verified).
// - "Move to the new key": the safety number read from the colleague's NEW device
//   (trust.replace with safetyNumber; the daemon compares it with the number computed
//   with the new key, and changes nothing if it differs). This window never shows that
//   number: the person must read it from the other screen.
// - "Verify", "Accept", "Unblock": give one key trust (trust.verify, trust.accept,
//   trust.unblock) with a click here, which no script of the chat can make. Verifying is
//   as Signal does it: both screens show the same safety number and a QR code of it; the
//   person compares them and says "The numbers match". Nothing asks the person to type
//   what this screen shows (reading aloud would become copy and paste).
// It shows peer names only as text (dom.js), and loads none of the chat's code.
import { RPC } from "./rpc.js";
import { keepSecret, connectionText, showSignInProblem } from "./auth.js";
import { el, clear } from "./dom.js";

const $ = (id) => document.getElementById(id);
const TASK_KEY = "parley.confirm.task";
const FP = /^[0-9a-z]{4}(-[0-9a-z]{4}){3,15}$/;
// peers.connect waits this long for the other end's handshake.
const CONNECT_TIMEOUT_MS = 15000;
const ONE_KEY_TASKS = ["verify", "accept", "unblock"];

// What to do, from the fragment (#k=SECRET&do=replace&old=FP&new=FP, &do=connect, or
// &do=verify|accept|unblock&peer=FP).
// It leaves the address bar at once; a reload finds it in this tab's sessionStorage.
function takeTask() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has("k")) {
    keepSecret(params.get("k"));
    const task = { do: params.get("do"), old: params.get("old"), new: params.get("new"), peer: params.get("peer") };
    sessionStorage.setItem(TASK_KEY, JSON.stringify(task));
    history.replaceState(null, "", location.pathname);
  }
  try {
    const task = JSON.parse(sessionStorage.getItem(TASK_KEY) || "null");
    if (task && task.do === "connect") return { do: "connect" };
    if (task && ONE_KEY_TASKS.includes(task.do) && FP.test(task.peer || "")) return { do: task.do, peer: task.peer };
    if (task && task.do === "replace" && FP.test(task.old || "") && FP.test(task.new || "") && task.old !== task.new) return task;
  } catch { /* nothing usable */ }
  return null;
}

const task = takeTask();
let started = false;
const rpc = new RPC({
  onEvent: () => {},
  onState: (s, reason) => {
    if (s === "refused" || s === "signed-out") { showSignInProblem(s); }
    $("confirm-connection").textContent = connectionText(s, reason);
    if (s === "open" && !started) { started = true; start().catch((e) => fail(e.message)); }
  },
});
rpc.connect();

function fail(text) {
  clear($("confirm-body")).append(el("p", { class: "error", role: "alert", text }));
}

function short(fp) { return String(fp).split("-").slice(0, 2).join("-"); }
function label(p) { return p.nickname || p.name; }

async function start() {
  if (!task) {
    return fail(`Nothing to confirm here: this is Parley's confirmation window, opened from the chat (Verify, Add by address, Move to this key…). The chat is at http://127.0.0.1:${location.port}/ (open your sign-in link).`);
  }
  if (task.do === "connect") return await showConnect();
  if (ONE_KEY_TASKS.includes(task.do)) return await showKey(task.do);
  return showReplace();
}

async function showConnect() {
  $("confirm-title").textContent = "Add a contact by address";
  const status = await rpc.call("node.status").catch(() => null);
  const mine = status?.reachableAt || [];
  const input = el("input", { id: "connect-address", autocomplete: "off", spellcheck: "false", size: 32,
    placeholder: "host:port, e.g. 192.168.1.20:7777", "aria-describedby": "connect-help" });
  const result = el("div", { id: "connect-result", role: "status" });
  const button = el("button", { type: "submit", id: "connect-go", class: "primary", text: "Connect" });
  const form = el("form", { id: "connect-form" },
    el("p", { id: "connect-help" },
      "Type the address your colleague gave you (their Parley shows it here, under “Your address”; in a terminal, the address line of ",
      el("code", { text: "parley status" }), "). Type it yourself: do not use an address from a message or a web page."),
    el("label", { for: "connect-address", text: "Address " }), input, " ", button, result,
    el("h2", { text: "Your address" }),
    mine.length
      ? el("p", { id: "my-address" }, "To be added by a colleague, give them: ",
        mine.flatMap((a, i) => [i ? " or " : "", el("code", { text: a })]))
      : el("p", { id: "my-address", text: "This computer has no address a colleague could reach (is parleyd listening on the network?)." }));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const address = input.value.trim();
    if (!address) return;
    button.disabled = true;
    result.className = "";
    result.textContent = `Connecting to ${address}…`;
    try {
      const r = await rpc.call("peers.connect", { address, wait: true, timeoutMs: CONNECT_TIMEOUT_MS });
      const p = r.peer;
      result.className = "ok";
      clear(result).append(...[
        el("p", {}, "✓ Connected. The key that answered calls itself ", el("strong", { class: "peer-name", text: label(p) }),
          ` (${short(p.fingerprint)}).`),
        p.nameClash ? el("p", { class: "error" }, "⚠ Another key uses a name like this one: it may not be who you think.") : null,
        el("p", {}, p.trust === "verified" ? "You verified this key before."
          : "It is not verified: an address says nothing about who answers there. Before you trust it, compare the safety number with your colleague (Verify, in the conversation)."),
        el("p", {}, "You can close this window.")].filter(Boolean));
    } catch (e) {
      result.className = "error";
      result.textContent = e.message;
    } finally {
      button.disabled = false;
    }
  });
  clear($("confirm-body")).append(form);
  input.focus();
}

async function showReplace() {
  $("confirm-title").textContent = "Move a conversation to a new key";
  const [oldShown, newShown] = await Promise.all([
    rpc.call("trust.show", { peer: task.old }), rpc.call("trust.show", { peer: task.new })]);
  const oldP = oldShown.peer;
  const newP = newShown.peer;
  const name = label(oldP);
  const me = await rpc.call("node.whoami");
  const input = el("input", { id: "replace-number", autocomplete: "off", spellcheck: "false", inputmode: "numeric",
    size: 48, "aria-describedby": "replace-help" });
  const result = el("div", { id: "replace-result", role: "status" });
  const button = el("button", { type: "submit", id: "replace-go", class: "primary", text: "Move the conversation" });
  const form = el("form", { id: "replace-form" },
    el("p", {}, "Use this when ", el("strong", { class: "peer-name", text: name }), ` (old key ${short(oldP.fingerprint)}) reinstalled and now has a new key, `,
      el("strong", { class: "peer-name", text: label(newP) }), ` (${short(newP.fingerprint)}). The conversation, its history and `,
      `the messages still waiting move to the new key; the old key is refused from then on.`),
    el("ol", { id: "replace-help" },
      el("li", {}, "Be with your colleague, or on a call where you recognise their voice."),
      el("li", {}, "On their NEW device, they open Parley and choose Verify on you (", el("strong", { text: me.name }),
        "), or run ", el("code", { text: `parley trust show ${me.fingerprint.split("-")[0]}` }), "."),
      el("li", {}, "Type the safety number shown there. Not a number from a message, a web page or this computer.")),
    el("label", { for: "replace-number", text: "Safety number on their new device " }), input, " ", button, result);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!/[0-9]/.test(input.value)) return;
    button.disabled = true;
    try {
      const r = await rpc.call("trust.replace", { peer: oldP.fingerprint, newFingerprint: newP.fingerprint, safetyNumber: input.value });
      result.className = "ok";
      result.textContent = `✓ Done: your conversation with ${label(r.peer)} now uses the new key (verified), with its history. You can close this window.`;
      form.querySelectorAll("input, button").forEach((e) => { e.disabled = true; });
    } catch (e) {
      result.className = "error";
      result.textContent = e.message;
      button.disabled = false;
    }
  });
  clear($("confirm-body")).append(form);
  input.focus();
}

// A QR code of `text` (Debian's node-qrcode-generator, qrcode.js) as a GIF data: image,
// 3 px modules and a quiet zone of 4 modules; null if the encoder is missing.
function qrImage(text, alt) {
  if (typeof globalThis.qrcode !== "function" || !text) return null;
  const qr = globalThis.qrcode(0, "M");
  qr.addData(text);
  qr.make();
  return el("img", { id: "verify-qr", class: "qr", src: qr.createDataURL(3, 12), alt, width: qr.getModuleCount() * 3 + 24 });
}

const KEY_TITLES = { verify: "Verify a key", accept: "Accept a new key", unblock: "Unblock a key" };

// One key: its safety number and QR code, and the one thing the person came to do.
async function showKey(what) {
  $("confirm-title").textContent = KEY_TITLES[what];
  const shown = await rpc.call("trust.show", { peer: task.peer });
  const p = shown.peer;
  const name = label(p);
  const result = el("div", { id: "verify-result", class: "verify-result", role: "status" });
  const actions = el("div", { class: "verify-actions" });
  const act = async (method, done) => {
    try {
      const r = await rpc.call(method, { peer: p.fingerprint, ...(method === "trust.verify" ? { fingerprint: p.fingerprint } : {}) });
      result.className = "verify-result ok";
      result.textContent = `${done(label(r.peer))} You can close this window.`;
      actions.remove();
    } catch (e) {
      result.className = "verify-result error";
      result.textContent = e.message;
    }
  };
  const intro = {
    verify: p.trust === "verified" ? "✓ You verified this key." : `Compare this with ${name}'s screen, side by side or read aloud, or scan the code with their camera. Do they match?`,
    accept: `A new key that calls itself ${name} asks to talk to you; nothing is exchanged until you accept it. Accept it only if you expect it: compare the safety number with its owner first.`,
    unblock: `You blocked this key. Unblock it only if you know it is ${name}'s: compare the safety number with them first.`,
  }[what];
  if (what === "verify" && p.trust !== "verified") {
    actions.append(
      el("button", { type: "button", id: "verify-match", class: "primary", onclick: () => act("trust.verify", (n) => `✓ Verified: this is ${n}'s key.`), text: "The numbers match" }), " ",
      el("button", { type: "button", id: "verify-differ", onclick: () => {
        result.className = "verify-result error";
        result.textContent = `Not verified. Do not trust this key: it may not be ${name}. Ask ${name} in person; if it is not theirs, block it in the conversation.`;
      }, text: "They differ" }));
  } else if (what === "accept") {
    actions.append(
      el("button", { type: "button", id: "accept-go", class: "primary", onclick: () => act("trust.accept", (n) => `✓ Accepted: you can talk to ${n}.`), text: "Accept" }), " ",
      el("button", { type: "button", id: "block-go", onclick: () => act("trust.block", (n) => `Blocked ${n}'s key.`), text: "Block" }));
  } else if (what === "unblock") {
    actions.append(el("button", { type: "button", id: "unblock-go", class: "primary", onclick: () => act("trust.unblock", (n) => `✓ Unblocked ${n}.`), text: "Unblock" }));
  }
  clear($("confirm-body")).append(
    el("p", {}, "Safety number with ", el("strong", { class: "peer-name", text: name }), ` (${short(p.fingerprint)}). `,
      `${name}'s Parley shows the same number for you (Verify, or `, el("code", { text: "parley trust show" }), "):"),
    el("div", { class: "verify-codes" },
      el("div", { class: "safety", id: "safety-number", text: p.safetyNumber }),
      qrImage(shown.qrText, `QR code of the safety number with ${name}`)),
    el("p", { class: p.trust === "verified" && what === "verify" ? "ok" : "", text: intro }),
    actions, result,
    // For a colleague who verifies in a terminal (`parley trust verify … --fingerprint`):
    // they type what they read here, from this screen. Theirs is not shown: it would be
    // what this screen was given, which is what is being checked.
    el("p", { class: "hint" }, "Your fingerprint, to read out to a colleague who verifies in a terminal: ",
      el("code", { id: "your-fingerprint", text: shown.yourFingerprint })));
}
