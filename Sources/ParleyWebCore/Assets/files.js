// Attachments in a conversation: one line per file transfer (files.* and file.* in
// docs/CONTROL.md), its progress, its buttons, its thumbnail; and the upload that sends a
// file from the browser (POST /upload, docs/WEB.md "Files"). A transfer's name, caption,
// peer name and path come from a peer or from the disk: they go into the page as text
// (dom.js), and a thumbnail is shown only as an <img> from a data: URL built here, and
// only for a JPEG or PNG whose bytes say so. A received file is fetched from parley web
// (GET /files/ID, with the page's key) only to be saved as a download or, when its bytes
// are a PNG, JPEG, GIF or WebP picture, shown as an <img> from a blob: URL of that type:
// never as a document of this page, whatever its name or the sender claimed.
import { el, time } from "./dom.js";
import { uploadKey } from "./auth.js";

// WebLimits.maxUploadBytes: checked here first so a too-large file is refused before it
// is read at all; the server checks again.
export const MAX_UPLOAD_BYTES = 1 << 30;
// A thumbnail is at most 64 KiB (docs/PROTOCOL.md); its base64 is 4/3 of that. Anything
// longer is not a thumbnail.
const MAX_THUMBNAIL_BASE64 = 96 * 1024;
const MAGIC = new Map([
  ["image/jpeg", [0xff, 0xd8, 0xff]],
  ["image/png", [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
]);
// WebRasterType (WebReceivedFile.swift): the pictures shown inline, known by their bytes.
const RASTER_MAGIC = [
  ["image/png", 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ["image/jpeg", 0, [0xff, 0xd8, 0xff]],
  ["image/gif", 0, [0x47, 0x49, 0x46, 0x38, 0x37, 0x61]],
  ["image/gif", 0, [0x47, 0x49, 0x46, 0x38, 0x39, 0x61]],
  ["image/webp", 0, [0x52, 0x49, 0x46, 0x46]],
];
const WEBP_AT_8 = [0x57, 0x45, 0x42, 0x50];
// A received picture is fetched whole to be shown inline only up to this size; a larger
// one is a file to save, like any other.
export const MAX_INLINE_PICTURE_BYTES = 16 << 20;
const FINAL = new Set(["completed", "rejected", "cancelled", "failed"]);

export function formatBytes(n) {
  if (typeof n !== "number" || !isFinite(n) || n < 0) return "?";
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  if (unit === 0) return `${n} ${n === 1 ? "byte" : "bytes"}`;
  return `${value >= 10 ? Math.round(value) : Math.round(value * 10) / 10} ${units[unit]}`;
}

export function isFinal(t) { return FINAL.has(t.state); }

// The conversation a transfer belongs to (the same shape app.js uses).
export function convOfTransfer(t) {
  return t.room ? { kind: "room", id: t.room } : { kind: "peer", fp: t.peer };
}

// A data: URL for a `files.thumbnail` result, or null: only image/jpeg or image/png, only
// when the decoded bytes start with that type's magic number, only up to the size a
// thumbnail can have. Re-encoded from the decoded bytes, so the URL holds nothing but
// base64 of what was checked.
export function thumbnailURL(result) {
  if (!result || typeof result.mediaType !== "string" || typeof result.data !== "string") return null;
  const magic = MAGIC.get(result.mediaType);
  if (!magic || result.data.length > MAX_THUMBNAIL_BASE64) return null;
  let bytes;
  try { bytes = atob(result.data); } catch { return null; }
  if (bytes.length < magic.length) return null;
  for (let i = 0; i < magic.length; i++) if (bytes.charCodeAt(i) !== magic[i]) return null;
  return `data:${result.mediaType};base64,${btoa(bytes)}`;
}

// The raster type the first bytes of a file say (an Uint8Array), or null.
export function rasterType(bytes) {
  const at = (magic, offset) => bytes.length >= offset + magic.length && magic.every((b, i) => bytes[offset + i] === b);
  for (const [type, offset, magic] of RASTER_MAGIC) {
    if (!at(magic, offset)) continue;
    if (type === "image/webp" && !at(WEBP_AT_8, 8)) continue;
    return type;
  }
  return null;
}

// GET /files/ID with the page's key (auth.js): the Response, or an Error with
// parley web's or the daemon's words.
async function fetchReceived(t) {
  const key = uploadKey();
  if (!key) throw new Error("not connected to parley web: wait until it reconnects");
  const res = await fetch(`/files/${encodeURIComponent(t.id)}`, {
    headers: { "X-Parley-Auth": key }, cache: "no-store", credentials: "omit", redirect: "error" });
  if (!res.ok) throw new Error((await res.text()).trim() || `cannot fetch ${t.name} (${res.status})`);
  return res;
}

// A blob: URL for a received picture, or null: only a completed incoming file of at most
// MAX_INLINE_PICTURE_BYTES whose bytes are a PNG, JPEG, GIF or WebP (checked here on the
// bytes, and the server must have said the same type: it decides by the same magic). The
// blob gets that image type, so even opened on its own it is only ever an image.
export async function pictureURL(t) {
  if (t.direction !== "in" || t.state !== "completed" || !(t.size > 0) || t.size > MAX_INLINE_PICTURE_BYTES) return null;
  // A conversation full of received files asks for them a few at a time: parley web
  // serves at most 4 files at once (WebLimits.maxConcurrentFileResponses), and Save
  // must still find room.
  while (picturesInFlight >= MAX_PICTURES_IN_FLIGHT) await new Promise((resolve) => pictureWaiters.push(resolve));
  picturesInFlight += 1;
  try { return await fetchPicture(t); } finally {
    picturesInFlight -= 1;
    const next = pictureWaiters.shift();
    if (next) next();
  }
}

const MAX_PICTURES_IN_FLIGHT = 2;
let picturesInFlight = 0;
const pictureWaiters = [];

async function fetchPicture(t) {
  const res = await fetchReceived(t);
  const blob = await res.blob();
  if (blob.size > MAX_INLINE_PICTURE_BYTES) return null;
  const type = rasterType(new Uint8Array(await blob.slice(0, 12).arrayBuffer()));
  if (!type || res.headers.get("Content-Type") !== type) return null;
  return URL.createObjectURL(new Blob([blob], { type }));
}

// Saves a received file as a download of the browser (its downloads folder, or where the
// person's browser asks): the bytes as application/octet-stream, so nothing renders them.
export async function saveFile(t) {
  const blob = await (await fetchReceived(t)).blob();
  const url = URL.createObjectURL(new Blob([blob], { type: "application/octet-stream" }));
  const a = el("a", { href: url, download: t.name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  // The download has its bytes once it started; the URL is not needed after that.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function stateText(t) {
  switch (t.state) {
    case "offered": return t.direction === "in" ? "waiting for you" : "offered";
    case "transferring": return t.direction === "in" ? "receiving" : "sending";
    case "completed": return t.direction === "in" ? "received" : "sent";
    default: return t.state;
  }
}

// One attachment line. `actions` = {accept, reject, cancel, save} (each called with the
// transfer); `thumbnail` is a data: URL or null; `picture` a blob: URL of the received
// picture itself (pictureURL) or null; `saved` says the person saved a copy; `inRoom`
// shows who a room file went to.
export function renderTransfer(t, { actions, thumbnail, picture, saved, inRoom }) {
  const mine = t.direction === "out";
  const received = !mine && t.state === "completed";
  const moving = t.state === "transferring";
  const percent = t.size > 0 ? Math.floor((100 * t.bytesDone) / t.size) : (t.state === "completed" ? 100 : 0);
  const progress = moving || (t.state === "offered" && t.bytesDone > 0) ? el("div", { class: "progress" },
    el("progress", { max: String(Math.max(t.size, 1)), value: String(Math.min(t.bytesDone, t.size)),
      "aria-label": `${percent}% of ${t.name}` }),
    el("span", { class: "progress-text",
      text: `${percent}% · ${formatBytes(t.bytesDone)} of ${formatBytes(t.size)}${t.rate ? ` · ${formatBytes(t.rate)}/s` : ""}` }))
    : null;
  const buttons = el("div", { class: "file-actions" },
    !mine && t.state === "offered"
      ? el("button", { type: "button", class: "file-accept", onclick: () => actions.accept(t), text: "Accept" }) : null,
    !mine && t.state === "offered"
      ? el("button", { type: "button", class: "file-reject", onclick: () => actions.reject(t), text: "Reject" }) : null,
    moving || (mine && t.state === "offered")
      ? el("button", { type: "button", class: "file-cancel", onclick: () => actions.cancel(t), text: "Cancel" }) : null,
    received ? el("button", { type: "button", class: "file-save", onclick: () => actions.save(t), text: "Save",
      title: "Save a copy in your browser's downloads folder" }) : null);
  const who = mine ? (inRoom ? `to ${t.peerName}` : null) : t.peerName;
  return el("li", { class: `msg file ${mine ? "out" : "in"} state-${t.state}`, dataset: { transfer: t.id, time: String(t.createdAt) } },
    who ? el("div", { class: "author", text: who }) : null,
    picture && received ? el("img", { class: "picture", src: picture, alt: t.name })
      : thumbnail ? el("img", { class: "thumb", src: thumbnail, alt: `preview of ${t.name}` }) : null,
    el("div", { class: "file-head" },
      el("span", { class: "file-name", text: t.name }),
      el("span", { class: "file-size", text: formatBytes(t.size) })),
    el("div", { class: "file-state", text: stateText(t) }),
    progress,
    t.caption ? el("div", { class: "body caption", text: t.caption }) : null,
    // Where the daemon keeps it is its own state (not a folder the person opens): the
    // page offers Save instead, and says where that copy went.
    received && saved ? el("div", { class: "file-saved", text: "Saved a copy in your downloads folder." }) : null,
    t.error && (t.state === "failed" || t.state === "rejected" || t.state === "cancelled")
      ? el("div", { class: "error file-error", text: t.error }) : null,
    buttons,
    el("div", { class: "meta", text: time(t.createdAt) }));
}

// Sends `file` to `to` (a peer fingerprint or "#room id") through POST /upload, with
// upload progress. Resolves to {transfers} or rejects with an Error carrying the server's
// message. `onProgress(sent, total)`; the returned object's `abort()` stops the upload
// (the server then removes what it staged).
export function upload(file, to, caption, onProgress) {
  const key = uploadKey();
  if (!key) return { done: Promise.reject(new Error("not connected to parley web: wait until it reconnects")), abort: () => {} };
  const xhr = new XMLHttpRequest();
  const params = new URLSearchParams();
  params.set("to", to);
  params.set("name", file.name);
  if (caption) params.set("caption", caption);
  const done = new Promise((resolve, reject) => {
    xhr.upload.addEventListener("progress", (e) => onProgress(e.loaded, e.total || file.size));
    xhr.addEventListener("load", () => {
      let reply = null;
      try { reply = JSON.parse(xhr.responseText); } catch { /* not JSON: a plain refusal */ }
      if (xhr.status === 200 && reply && Array.isArray(reply.transfers)) return resolve(reply);
      const message = reply && reply.error && typeof reply.error.message === "string"
        ? reply.error.message : (xhr.responseText || `upload refused (${xhr.status})`).trim();
      reject(new Error(message));
    });
    xhr.addEventListener("error", () => reject(new Error("the upload failed: the connection to parley web was lost")));
    xhr.addEventListener("abort", () => reject(Object.assign(new Error("upload cancelled"), { aborted: true })));
  });
  // URLSearchParams writes a space as "+", which the server reads as a space.
  xhr.open("POST", `/upload?${params.toString()}`);
  xhr.setRequestHeader("Content-Type", "application/octet-stream");
  // The upload's key (auth.js): only a page whose WebSocket signed in has it.
  xhr.setRequestHeader("X-Parley-Auth", key);
  xhr.send(file);
  return { done, abort: () => xhr.abort() };
}
