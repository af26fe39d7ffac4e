"""The conformance client's own Noise is proven against the cross-implementation vectors
before it is used to judge the daemon."""
import json
import pathlib

import pytest

from noise import DecryptError, HandshakeState

VECTORS = pathlib.Path(__file__).parent / "vectors"


def load(name):
    return json.loads((VECTORS / name).read_text())["vectors"]


def run_vector(v):
    psk_i = bytes.fromhex(v["init_psks"][0]) if v.get("init_psks") else None
    psk_r = bytes.fromhex(v["resp_psks"][0]) if v.get("resp_psks") else None
    init = HandshakeState(v["protocol_name"], True, bytes.fromhex(v["init_prologue"]),
                          bytes.fromhex(v["init_static"]), bytes.fromhex(v["init_ephemeral"]), psk_i)
    resp = HandshakeState(v["protocol_name"], False, bytes.fromhex(v["resp_prologue"]),
                          bytes.fromhex(v["resp_static"]), bytes.fromhex(v["resp_ephemeral"]), psk_r)
    transport = None
    for i, m in enumerate(v["messages"]):
        payload, expected = bytes.fromhex(m["payload"]), bytes.fromhex(m["ciphertext"])
        sender, receiver = (init, resp) if i % 2 == 0 else (resp, init)
        if transport is None:
            got = sender.write_message(payload)
            assert got == expected, f"{v['protocol_name']} handshake message {i}"
            assert receiver.read_message(got) == payload
            if init.finished and resp.finished:
                if "handshake_hash" in v:
                    assert init.handshake_hash.hex() == v["handshake_hash"]
                    assert resp.handshake_hash.hex() == v["handshake_hash"]
                transport = {init: init.split(), resp: resp.split()}
        else:
            send, _ = transport[sender]
            _, recv = transport[receiver]
            got = send.encrypt_with_ad(b"", payload)
            assert got == expected, f"{v['protocol_name']} transport message {i}"
            assert recv.decrypt_with_ad(b"", got) == payload
    assert transport is not None


@pytest.mark.parametrize("v", load("noise-xx.json") + load("noise-xxpsk0.json"), ids=lambda v: v["protocol_name"])
def test_vector(v):
    run_vector(v)


def test_a_changed_byte_is_refused():
    """The implementation can fail: one flipped bit in message 2 is not accepted."""
    name = "Noise_XX_25519_ChaChaPoly_SHA256"
    init = HandshakeState(name, True, b"", bytes(range(32)))
    resp = HandshakeState(name, False, b"", bytes(range(32, 64)))
    resp.read_message(init.write_message(b""))
    m2 = bytearray(resp.write_message(b"payload"))
    m2[-1] ^= 1
    with pytest.raises(DecryptError):
        init.read_message(bytes(m2))
