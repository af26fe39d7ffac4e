// Signing in (docs/WEB.md "Signing in"). The secret of this `parley web` run arrives in
// the sign-in link's fragment (#k=64 hex digits), which the browser never sends to any
// server. It is kept in sessionStorage (this tab and this origin: scheme, host and port)
// and never sent anywhere: each WebSocket starts with a challenge-response in which the
// SERVER PROVES FIRST that it holds the secret (HMAC-SHA-256 over our random nonce and our
// origin, checked with WebCrypto); only then does the page prove it holds it too, and only
// then does anything the person does leave the page. A server that cannot prove it (a
// program another local user started on this port after parley web stopped, or a
// parley web restarted with a new secret) gets nothing, and the page says so.
import { el } from "./dom.js";

const STORAGE_KEY = "parley.signin";
const HEX64 = /^[0-9a-f]{64}$/;
const SERVER_PROOF = "parley-web v1 server proof";
const PAGE_PROOF = "parley-web v1 page proof";
const UPLOAD_KEY = "parley-web v1 upload key";
// The server answers within two loopback round trips; past this the page closes the socket
// (having sent nothing but its nonce) and tries again later.
const SIGN_IN_TIMEOUT_MS = 10000;
const SIGN_IN_FILE = "$XDG_RUNTIME_DIR/parley/web.html";

let uploadKeyValue = null;

// Moves the secret from the address bar into this tab's sessionStorage (and out of the
// address bar, the history entry and anything shown on screen).
export function takeSecretFromFragment() {
  const m = /^#k=([0-9a-f]{64})$/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem(STORAGE_KEY, m[1]);
  history.replaceState(null, "", location.pathname + location.search);
}

// The confirmation window (confirm.js, its own origin) is given the secret by the page.
export function keepSecret(secret) {
  if (HEX64.test(secret || "")) sessionStorage.setItem(STORAGE_KEY, secret);
}

export function storedSecret() {
  const s = sessionStorage.getItem(STORAGE_KEY);
  return s && HEX64.test(s) ? s : null;
}

// The X-Parley-Auth value for POST /upload: set only while a WebSocket is signed in, so
// an upload never starts towards a server that has not proved itself.
export function uploadKey() { return uploadKeyValue; }
export function signedOut() { uploadKeyValue = null; }

const hexToBytes = (hex) => new Uint8Array(hex.match(/../g).map((b) => parseInt(b, 16)));
const bytesToHex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
const encode = (parts) => new TextEncoder().encode(parts.join("\n"));

async function hmacKey(secret) {
  return crypto.subtle.importKey("raw", hexToBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}
async function hmacHex(key, parts) {
  return bytesToHex(new Uint8Array(await crypto.subtle.sign("HMAC", key, encode(parts))));
}

// Signs `ws` (just opened) in with `secret`. Resolves once signed in. Rejects with an
// Error whose `impostor` is true when the server failed to prove it holds the secret
// (nothing of ours was sent to it but a random nonce).
export function signIn(ws, secret) {
  return new Promise((resolve, reject) => {
    let step = "hello";
    let pageNonce = null;
    let key = null;
    const finish = (error) => {
      if (step === "done") return;
      step = "done";
      clearTimeout(timer);
      ws.removeEventListener("message", onMessage);
      ws.removeEventListener("close", onClose);
      if (error) reject(error); else resolve();
    };
    const impostor = () => finish(Object.assign(new Error("the server could not prove it is your parley web"), { impostor: true }));
    // Closed before signing in: the server went away (or refused us); try again later.
    const onClose = (ev) => finish(Object.assign(new Error(ev.reason || "connection closed"), { impostor: false }));
    // No answer in time: nothing was given away; close and let the caller try again.
    const timer = setTimeout(() => { finish(Object.assign(new Error("no answer from parley web"), { impostor: false })); ws.close(); }, SIGN_IN_TIMEOUT_MS);
    const onMessage = async (ev) => {
      let msg = null;
      try { msg = JSON.parse(ev.data); } catch { /* checked below */ }
      if (step === "hello") {
        step = "checking";
        if (!key) return impostor(); // it spoke before our hello
        if (!msg || msg.auth !== "proof" || typeof msg.proof !== "string" || !HEX64.test(msg.proof) ||
            typeof msg.nonce !== "string" || !HEX64.test(msg.nonce)) return impostor();
        const proven = await crypto.subtle.verify("HMAC", key, hexToBytes(msg.proof), encode([SERVER_PROOF, location.origin, pageNonce]));
        if (!proven) return impostor();
        if (step !== "checking") return;
        step = "proved";
        ws.send(JSON.stringify({ auth: "proof", proof: await hmacHex(key, [PAGE_PROOF, location.origin, pageNonce, msg.nonce]) }));
      } else if (step === "proved") {
        if (msg && msg.auth === "ok") {
          uploadKeyValue = await hmacHex(key, [UPLOAD_KEY]);
          finish(null);
        } else impostor();
      } else if (step === "checking") {
        impostor(); // a second message before our proof: not the protocol
      }
    };
    ws.addEventListener("message", onMessage);
    ws.addEventListener("close", onClose);
    hmacKey(secret).then((k) => {
      key = k;
      pageNonce = bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
      if (step === "hello") ws.send(JSON.stringify({ auth: "hello", nonce: pageNonce }));
    }, (e) => finish(e));
  });
}

// The connection line's text for a state of rpc.js.
export function connectionText(s, reason) {
  switch (s) {
    case "open": return "connected";
    case "connecting": return "connecting…";
    case "signed-out": return "not signed in";
    case "refused": return "refused: not your parley web";
    default: return `disconnected${reason ? `: ${reason}` : ""} — retrying`;
  }
}

// Replaces the page with what the person must know and do, for "signed-out" and
// "refused". The chat is hidden: nothing more is typed into a page whose server is not
// proven.
export function showSignInProblem(s) {
  if (document.getElementById("sign-in-problem")) return;
  const app = document.getElementById("app");
  if (app) app.hidden = true;
  const text = s === "refused"
    ? ["This is not your Parley.",
       "The program answering on this port could not prove it is your parley web. Maybe parley web was restarted " +
       "(each run has a new secret), or another program is using its port. Nothing you typed was sent to it.",
       `Open your sign-in link again: the one parley web printed, or the file ${SIGN_IN_FILE}. Do not type anything here.`]
    : ["Not signed in.",
       `Open the sign-in link that parley web printed, or the file ${SIGN_IN_FILE}, in this browser.`];
  document.body.prepend(el("section", { id: "sign-in-problem", class: "sign-in-problem", role: "alert", dataset: { state: s } },
    el("h1", { text: text[0] }), ...text.slice(1).map((t) => el("p", { text: t }))));
}
