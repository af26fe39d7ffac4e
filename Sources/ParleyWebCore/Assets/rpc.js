// The page's client of the control protocol: JSON-RPC 2.0 over the WebSocket at /ws, one
// request or notification per message, exactly as on the control socket (docs/CONTROL.md;
// docs/WEB.md for what the relay refuses). Reconnects with backoff and resumes events
// with `since` (the last eventId seen).

export class RPC {
  constructor({ onEvent, onState }) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.nextId = 1;
    this.pending = new Map();
    this.lastEventId = null;
    this.backoff = 500;
    this.opened = false;
  }

  connect() {
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
    const ws = new WebSocket(url);
    this.ws = ws;
    this.onState("connecting");
    ws.addEventListener("open", () => {
      this.backoff = 500;
      this.opened = true;
      this.onState("open");
    });
    ws.addEventListener("message", (ev) => this.handle(ev.data));
    ws.addEventListener("close", (ev) => {
      for (const [, p] of this.pending) p.reject(new Error("connection closed"));
      this.pending.clear();
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
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error("not connected to parley web"));
    const id = this.nextId++;
    const req = { jsonrpc: "2.0", id, method };
    if (params !== undefined) req.params = params;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify(req));
    });
  }
}
