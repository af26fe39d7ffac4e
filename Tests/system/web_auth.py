"""`parley web`'s sign-in seen from outside the browser (docs/WEB.md "Signing in"), for the
browser tests: the sign-in link's shape, the HMAC proofs (computed here with Python's `hmac`,
independently of the server's libsodium and the page's WebCrypto), a raw WebSocket client
that can sign in or misbehave, and a squatter: a server another local user could bind to
the port of a `parley web` that stopped, recording everything a browser sends it."""
import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import struct
import threading

SIGN_IN_RE = re.compile(r"Sign in: (http://127\.0\.0\.1:(\d+)/#k=([0-9a-f]{64}))")
SERVER_PROOF = "parley-web v1 server proof"
PAGE_PROOF = "parley-web v1 page proof"
UPLOAD_KEY = "parley-web v1 upload key"


def _mac(secret_hex, parts):
    return hmac.new(bytes.fromhex(secret_hex), "\n".join(parts).encode(), hashlib.sha256).hexdigest()


def server_proof(secret_hex, origin, page_nonce):
    return _mac(secret_hex, [SERVER_PROOF, origin, page_nonce])


def page_proof(secret_hex, origin, page_nonce, server_nonce):
    return _mac(secret_hex, [PAGE_PROOF, origin, page_nonce, server_nonce])


def upload_key(secret_hex):
    return _mac(secret_hex, [UPLOAD_KEY])


def secret_in_sign_in_file(path):
    """The secret the person's sign-in file carries (read as the person: it is 0600)."""
    return re.search(r"#k=([0-9a-f]{64})", path.read_text()).group(1)


class RawWebSocket:
    """A minimal RFC 6455 client: text frames out (masked), frames in. Enough to act as the
    page, or as another local user who connects to the port directly."""

    def __init__(self, port, origin, host=None, extra_headers=None, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET /ws HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}", "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        if origin:
            lines.append(f"Origin: {origin}")
        for name, value in (extra_headers or {}).items():
            lines.append(f"{name}: {value}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            data += chunk
        head, _, self.buffer = data.partition(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1]) if head else 0

    def send_text(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def recv(self):
        """("text", str) or ("close", code, reason), skipping pings; ("eof",) if cut."""
        try:
            while True:
                b0, b1 = self._read(2)
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._read(8))[0]
                payload = self._read(n)
                opcode = b0 & 0x0F
                if opcode == 0x1:
                    return ("text", payload.decode())
                if opcode == 0x8:
                    code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                    return ("close", code, payload[2:].decode(errors="replace"))
        except (EOFError, ConnectionError, socket.timeout):
            return ("eof",)

    def sign_in(self, secret_hex, origin):
        """The page's side of the handshake; checks the server's proof first. Returns the
        server's last answer (("text", '{"auth":"ok"}') when signed in)."""
        nonce = secrets.token_hex(32)
        self.send_text(json.dumps({"auth": "hello", "nonce": nonce}))
        answer = self.recv()
        assert answer[0] == "text", answer
        proof = json.loads(answer[1])
        assert proof["proof"] == server_proof(secret_hex, origin, nonce), "the server could not prove itself"
        self.send_text(json.dumps({"auth": "proof", "proof": page_proof(secret_hex, origin, nonce, proof["nonce"])}))
        return self.recv()

    def call(self, method, params=None, id=1):
        request = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            request["params"] = params
        self.send_text(json.dumps(request))
        return self.recv()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Squatter:
    """What another local user could run on the port of a `parley web` that stopped: it
    serves a page (its own), accepts the WebSocket, answers the sign-in's hello with a proof
    it made up, and records every byte it is sent."""

    def __init__(self, port):
        self.port = port
        self.received = bytearray()
        self.lock = threading.Lock()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(16)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def text(self):
        with self.lock:
            return bytes(self.received).decode(errors="replace")

    def _record(self, data):
        with self.lock:
            self.received += data

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        conn.settimeout(30)
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            self._record(data)
            head = data.split(b"\r\n\r\n", 1)[0].decode(errors="replace")
            key = re.search(r"(?im)^sec-websocket-key:\s*(\S+)", head)
            if not key:
                body = b"<!doctype html><title>Parley</title><p>the squatter's page</p>"
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % len(body) + body)
                return
            accept = base64.b64encode(hashlib.sha1(
                (key.group(1) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
            buffer = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                while len(buffer) >= 2:
                    n = buffer[1] & 0x7F
                    offset = 2
                    if n == 126:
                        n, offset = struct.unpack(">H", buffer[2:4])[0], 4
                    elif n == 127:
                        n, offset = struct.unpack(">Q", buffer[2:10])[0], 10
                    if len(buffer) < offset + 4 + n:
                        break
                    mask = buffer[offset:offset + 4]
                    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(buffer[offset + 4:offset + 4 + n]))
                    opcode = buffer[0] & 0x0F
                    buffer = buffer[offset + 4 + n:]
                    self._record(payload + b"\n")
                    if opcode == 0x8:
                        return
                    if b'"hello"' in payload:
                        # A proof it cannot compute: any 64 hex digits.
                        fake = json.dumps({"auth": "proof", "proof": secrets.token_hex(32),
                                           "nonce": secrets.token_hex(32)}).encode()
                        conn.sendall(bytes([0x81, len(fake)]) + fake if len(fake) < 126
                                     else bytes([0x81, 126]) + struct.pack(">H", len(fake)) + fake)
        except OSError:
            return
        finally:
            conn.close()

    def close(self):
        self.closed = True
        self.listener.close()
