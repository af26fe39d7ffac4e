"""Noise Protocol Framework, revision 34: the XX and XXpsk0 handshakes with 25519,
ChaChaPoly and SHA256 or BLAKE2b, written from the Noise specification on top of libsodium
primitives (python3-nacl) and hashlib/hmac. Nothing here comes from Parley's Swift code.

Only what Parley uses: the patterns XX and XXpsk0, one optional psk, the initiator or the
responder role, transport CipherStates with Rekey().
"""
import hashlib
import hmac
import os

from nacl import bindings as sodium

DHLEN = 32
MAX_MESSAGE = 65535


class NoiseError(Exception):
    pass


class DecryptError(NoiseError):
    pass


def x25519_public(private: bytes) -> bytes:
    return sodium.crypto_scalarmult_base(private)


def x25519(private: bytes, public: bytes) -> bytes:
    return sodium.crypto_scalarmult(private, public)


def _nonce(n: int) -> bytes:
    # ChaChaPoly: 32 bits of zeros followed by the 64-bit little-endian counter.
    return b"\x00" * 4 + n.to_bytes(8, "little")


def chachapoly_encrypt(k: bytes, n: int, ad: bytes, plaintext: bytes) -> bytes:
    return sodium.crypto_aead_chacha20poly1305_ietf_encrypt(plaintext, ad, _nonce(n), k)


def chachapoly_decrypt(k: bytes, n: int, ad: bytes, ciphertext: bytes) -> bytes:
    try:
        return sodium.crypto_aead_chacha20poly1305_ietf_decrypt(ciphertext, ad, _nonce(n), k)
    except Exception as e:  # nacl.exceptions.CryptoError
        raise DecryptError("authentication failed") from e


class Hash:
    def __init__(self, name: str):
        if name == "SHA256":
            self.new, self.hashlen, self.blocklen = hashlib.sha256, 32, 64
        elif name == "BLAKE2b":
            self.new, self.hashlen, self.blocklen = hashlib.blake2b, 64, 128
        else:
            raise NoiseError(f"unsupported hash {name}")

    def hash(self, data: bytes) -> bytes:
        return self.new(data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.new).digest()

    def hkdf(self, chaining_key: bytes, ikm: bytes, outputs: int):
        temp = self.hmac(chaining_key, ikm)
        out1 = self.hmac(temp, b"\x01")
        out2 = self.hmac(temp, out1 + b"\x02")
        if outputs == 2:
            return out1, out2
        out3 = self.hmac(temp, out2 + b"\x03")
        return out1, out2, out3


class CipherState:
    def __init__(self, k=None):
        self.k = k
        self.n = 0

    def has_key(self):
        return self.k is not None

    def encrypt_with_ad(self, ad: bytes, plaintext: bytes) -> bytes:
        if self.k is None:
            return plaintext
        if self.n == 2**64 - 1:
            raise NoiseError("nonce exhausted")
        c = chachapoly_encrypt(self.k, self.n, ad, plaintext)
        self.n += 1
        return c

    def decrypt_with_ad(self, ad: bytes, ciphertext: bytes) -> bytes:
        if self.k is None:
            return ciphertext
        if self.n == 2**64 - 1:
            raise NoiseError("nonce exhausted")
        p = chachapoly_decrypt(self.k, self.n, ad, ciphertext)
        self.n += 1
        return p

    def rekey(self):
        # REKEY(k) = first 32 bytes of ENCRYPT(k, maxnonce, zerolen, zeros).
        self.k = chachapoly_encrypt(self.k, 2**64 - 1, b"", b"\x00" * 32)[:32]


class SymmetricState:
    def __init__(self, protocol_name: bytes, hash_: Hash):
        self.H = hash_
        if len(protocol_name) <= hash_.hashlen:
            self.h = protocol_name + b"\x00" * (hash_.hashlen - len(protocol_name))
        else:
            self.h = hash_.hash(protocol_name)
        self.ck = self.h
        self.cs = CipherState()

    def mix_key(self, ikm: bytes):
        self.ck, temp_k = self.H.hkdf(self.ck, ikm, 2)
        self.cs = CipherState(temp_k[:32])

    def mix_hash(self, data: bytes):
        self.h = self.H.hash(self.h + data)

    def mix_key_and_hash(self, ikm: bytes):
        self.ck, temp_h, temp_k = self.H.hkdf(self.ck, ikm, 3)
        self.mix_hash(temp_h)
        self.cs = CipherState(temp_k[:32])

    def encrypt_and_hash(self, plaintext: bytes) -> bytes:
        c = self.cs.encrypt_with_ad(self.h, plaintext)
        self.mix_hash(c)
        return c

    def decrypt_and_hash(self, ciphertext: bytes) -> bytes:
        p = self.cs.decrypt_with_ad(self.h, ciphertext)
        self.mix_hash(ciphertext)
        return p

    def split(self):
        k1, k2 = self.H.hkdf(self.ck, b"", 2)
        return CipherState(k1[:32]), CipherState(k2[:32])


# The message patterns (Noise spec 7.5 and 9.3): XX, and XXpsk0 (psk first in message 1).
PATTERNS = {
    "XX": [["e"], ["e", "ee", "s", "es"], ["s", "se"]],
    "XXpsk0": [["psk", "e"], ["e", "ee", "s", "es"], ["s", "se"]],
}


class HandshakeState:
    """One side of an XX or XXpsk0 handshake.

    protocol_name: e.g. "Noise_XX_25519_ChaChaPoly_SHA256"; s: our static private key;
    e: our ephemeral private key (random if None; fixed only for test vectors).
    """

    def __init__(self, protocol_name: str, initiator: bool, prologue: bytes, s: bytes,
                 e: bytes = None, psk: bytes = None):
        parts = protocol_name.split("_")
        if len(parts) != 5 or parts[0] != "Noise" or parts[2] != "25519" or parts[3] != "ChaChaPoly":
            raise NoiseError(f"unsupported protocol {protocol_name}")
        self.pattern_name = parts[1]
        if self.pattern_name not in PATTERNS:
            raise NoiseError(f"unsupported pattern {self.pattern_name}")
        self.psk_mode = self.pattern_name != "XX"
        if self.psk_mode and (psk is None or len(psk) != 32):
            raise NoiseError("XXpsk0 needs a 32-byte psk")
        self.psk = psk
        self.ss = SymmetricState(protocol_name.encode(), Hash(parts[4]))
        self.ss.mix_hash(prologue)
        self.initiator = initiator
        self.s = s
        self.s_pub = x25519_public(s)
        self._e_fixed = e
        self.e = None
        self.e_pub = None
        self.rs = None
        self.re = None
        self.messages = list(PATTERNS[self.pattern_name])
        self.step = 0

    @property
    def finished(self):
        return self.step == len(self.messages)

    def _my_turn(self):
        return (self.step % 2 == 0) == self.initiator

    def _dh(self, token):
        # ee, es, se: the first letter is the initiator's key, the second the responder's.
        if token == "ee":
            return x25519(self.e, self.re)
        if token == "es":
            return x25519(self.e, self.rs) if self.initiator else x25519(self.s, self.re)
        if token == "se":
            return x25519(self.s, self.re) if self.initiator else x25519(self.e, self.rs)
        raise NoiseError(token)

    def write_message(self, payload: bytes) -> bytes:
        if self.finished or not self._my_turn():
            raise NoiseError("not our turn to write")
        out = b""
        for token in self.messages[self.step]:
            if token == "e":
                self.e = self._e_fixed if self._e_fixed is not None else os.urandom(32)
                self.e_pub = x25519_public(self.e)
                out += self.e_pub
                self.ss.mix_hash(self.e_pub)
                if self.psk_mode:
                    self.ss.mix_key(self.e_pub)
            elif token == "s":
                out += self.ss.encrypt_and_hash(self.s_pub)
            elif token == "psk":
                self.ss.mix_key_and_hash(self.psk)
            else:
                self.ss.mix_key(self._dh(token))
        out += self.ss.encrypt_and_hash(payload)
        self.step += 1
        if len(out) > MAX_MESSAGE:
            raise NoiseError("message too long")
        return out

    def read_message(self, message: bytes) -> bytes:
        if self.finished or self._my_turn():
            raise NoiseError("not our turn to read")
        if len(message) > MAX_MESSAGE:
            raise NoiseError("message too long")
        rest = message
        for token in self.messages[self.step]:
            if token == "e":
                if len(rest) < DHLEN:
                    raise NoiseError("message too short")
                self.re, rest = rest[:DHLEN], rest[DHLEN:]
                self.ss.mix_hash(self.re)
                if self.psk_mode:
                    self.ss.mix_key(self.re)
            elif token == "s":
                n = DHLEN + (16 if self.ss.cs.has_key() else 0)
                if len(rest) < n:
                    raise NoiseError("message too short")
                self.rs = self.ss.decrypt_and_hash(rest[:n])
                rest = rest[n:]
            elif token == "psk":
                self.ss.mix_key_and_hash(self.psk)
            else:
                self.ss.mix_key(self._dh(token))
        payload = self.ss.decrypt_and_hash(rest)
        self.step += 1
        return payload

    @property
    def handshake_hash(self):
        return self.ss.h

    def split(self):
        """(send, receive) CipherStates for this side."""
        c1, c2 = self.ss.split()
        return (c1, c2) if self.initiator else (c2, c1)
