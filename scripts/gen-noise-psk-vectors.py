#!/usr/bin/env python3
"""Regenerates Tests/ParleyCoreTests/Fixtures/noise-xxpsk3.json and noise-xxpsk0.json.

The official cacophony/snow vectors in noise-xx.json cover plain XX only. This produces
XXpsk3 and XXpsk0 (Parley's network-key pattern) vectors from an independent implementation, `noiseprotocol` 0.3.1 from PyPI
(itself tested against the cacophony vectors), in the same format, with cacophony's
fixed keys, prologue, psk and payloads. Not run by CI; the output is committed.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install noiseprotocol==0.3.1
    /tmp/v/bin/python scripts/gen-noise-psk-vectors.py psk3 > Tests/ParleyCoreTests/Fixtures/noise-xxpsk3.json
    /tmp/v/bin/python scripts/gen-noise-psk-vectors.py psk0 > Tests/ParleyCoreTests/Fixtures/noise-xxpsk0.json
"""
import json

from noise.connection import Keypair, NoiseConnection

PROLOGUE = bytes.fromhex("4a6f686e2047616c74")  # "John Galt"
PSK = bytes.fromhex("54686973206973206d7920417573747269616e20706572737065637469766521")
INIT_STATIC = bytes.fromhex("e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1")
INIT_EPHEMERAL = bytes.fromhex("893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a")
RESP_STATIC = bytes.fromhex("4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893")
RESP_EPHEMERAL = bytes.fromhex("bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b")
PAYLOADS = [bytes.fromhex(h) for h in [
    "4c756477696720766f6e204d69736573", "4d757272617920526f746862617264",
    "462e20412e20486179656b", "4361726c204d656e676572",
    "4a65616e2d426170746973746520536179", "457567656e2042f6686d20766f6e2042617765726b",
]]
HANDSHAKE_MESSAGES = 3


def party(name, initiator, static, ephemeral):
    conn = NoiseConnection.from_name(name.encode())
    conn.set_as_initiator() if initiator else conn.set_as_responder()
    conn.set_prologue(PROLOGUE)
    conn.set_psks(psk=PSK)
    conn.set_keypair_from_private_bytes(Keypair.STATIC, static)
    conn.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ephemeral)
    conn.start_handshake()
    return conn


def vector(name):
    init = party(name, True, INIT_STATIC, INIT_EPHEMERAL)
    resp = party(name, False, RESP_STATIC, RESP_EPHEMERAL)
    messages = []
    for i, payload in enumerate(PAYLOADS):
        sender, receiver = (init, resp) if i % 2 == 0 else (resp, init)
        if i < HANDSHAKE_MESSAGES:
            ciphertext = sender.write_message(payload)
            assert receiver.read_message(ciphertext) == payload
        else:
            ciphertext = sender.encrypt(payload)
            assert receiver.decrypt(ciphertext) == payload
        messages.append({"payload": payload.hex(), "ciphertext": bytes(ciphertext).hex()})
    assert init.get_handshake_hash() == resp.get_handshake_hash()
    return {
        "protocol_name": name,
        "init_prologue": PROLOGUE.hex(), "init_psks": [PSK.hex()],
        "init_static": INIT_STATIC.hex(), "init_ephemeral": INIT_EPHEMERAL.hex(),
        "resp_prologue": PROLOGUE.hex(), "resp_psks": [PSK.hex()],
        "resp_static": RESP_STATIC.hex(), "resp_ephemeral": RESP_EPHEMERAL.hex(),
        "handshake_hash": bytes(init.get_handshake_hash()).hex(),
        "messages": messages,
    }


if __name__ == "__main__":
    import sys
    mod = sys.argv[1] if len(sys.argv) > 1 else "psk3"
    names = [f"Noise_XX{mod}_25519_ChaChaPoly_SHA256", f"Noise_XX{mod}_25519_ChaChaPoly_BLAKE2b"]
    print(json.dumps({"vectors": [vector(n) for n in names]}, indent=2))
