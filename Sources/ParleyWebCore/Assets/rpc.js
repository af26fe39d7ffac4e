// The page's client of the control protocol: JSON-RPC 2.0 over the WebSocket at /ws, one
// request or notification per message, exactly as on the control socket (docs/CONTROL.md;
// docs/WEB.md for what the relay refuses). Reconnects with backoff and resumes events
// with `since` (the last eventId seen). Every WebSocket signs in first (auth.js): no
// request leaves the page before the server has proved it is the person's parley web.
import { signIn, storedSecret, signedOut } from "./auth.js";

export class RPC {
  constructor({ onEvent, onState }) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.nextId = 1;
    this.pending = new Map();
    this.lastEventId = null;
    this.backoff = 500;
    this.opened = false;
    this.signedIn = false;
    this.refused = false;
  }

  connect() {
    const secret = storedSecret();
    if (!secret) { this.onState("signed-out"); return; }
    if (this.refused) return;
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
    const ws = new WebSocket(url);
    this.ws = ws;
    this.onState("connecting");
    ws.addEventListener("open", async () => {
      try {
        await signIn(ws, secret);
      } catch (e) {
        if (e.impostor) {
          // Never again from this tab: the secret stays unsent, the person is told.
          this.refused = true;
          ws.close();
          this.onState("refused", e.message);
        }
        return;
      }
      if (ws !== this.ws || ws.readyState !== WebSocket.OPEN) return;
      this.signedIn = true;
      this.backoff = 500;
      this.opened = true;
      this.onState("open");
    });
    ws.addEventListener("message", (ev) => { if (this.signedIn && ws === this.ws) this.handle(ev.data); });
    ws.addEventListener("close", (ev) => {
      this.signedIn = false;
      signedOut();
      for (const [, p] of this.pending) p.reject(new Error("connection closed"));
      this.pending.clear();
      if (this.refused) return;
      this.onState("closed", ev.reason || "");
      setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(this.backoff * 2, 10000);
    });
  }

  handle(text) {
    let msg;
    try { msg = JSON.parse(text); } catch { return; }
    if (msg && typeof msg === "object" && "id" in msg && msg.id !== null && this.pending.has(msg.id)) {
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error) p.reject(Object.assign(new Error(String(msg.error.message)), { code: msg.error.code, data: msg.error.data }));
      else p.resolve(msg.result);
      return;
    }
    if (msg && typeof msg.method === "string") {
      const params = msg.params || {};
      if (typeof params.eventId === "number") this.lastEventId = params.eventId;
      this.onEvent(msg.method, params);
    }
  }

  call(method, params) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || !this.signedIn) return Promise.reject(new Error("not connected to parley web"));
    const id = this.nextId++;
    const req = { jsonrpc: "2.0", id, method };
    if (params !== undefined) req.params = params;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify(req));
    });
  }
}
