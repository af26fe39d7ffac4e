"""Issue 18: a hostile file sender (parley-adversary `file` mode) against a real parleyd.
Path traversal and control characters in names, a 2^63-byte offer, corrupted chunks (re-
fetched once, refused when repeated), a chunk bigger than offered, a lying file hash, an
offer in an older format (its file hash BLAKE2b of the whole file):
each refused or sanitized, nothing written outside the download directory, no partial file
left and none renamed into place unless it matched."""
import os
import subprocess

import pytest

from parley_harness import bin_dir, wait_until

ADVERSARY = str(bin_dir() / "parley-adversary")


def start_attack(node, attack):
    return subprocess.Popen([ADVERSARY, "file", node.address, attack], stdout=subprocess.PIPE, text=True)


def incoming(node):
    return [t for t in node.call("files.list", {})["transfers"] if t["direction"] == "in"]


def accept_when_offered(node):
    t = wait_until(lambda: (incoming(node) or [None])[0], timeout=20, what="the adversary's offer")
    node.call("files.accept", {"id": t["id"]})
    return t


def outcome(proc):
    out, _ = proc.communicate(timeout=60)
    return out.splitlines()


def files_dir(node):
    d = node.state_dir / "files"
    return sorted(os.listdir(d)) if d.exists() else []


@pytest.fixture
def victim(cluster):
    return cluster.node("victim").start()


def test_path_traversal_name_is_sanitized_into_the_download_directory(victim):
    p = start_attack(victim, "traversal")
    t = accept_when_offered(victim)
    assert t["name"] == "passwd"
    lines = outcome(p)
    assert lines[-1].startswith("end completed"), lines
    assert files_dir(victim) == ["passwd"]
    [done] = incoming(victim)
    assert done["path"] == str(victim.state_dir / "files" / "passwd")
    assert not (victim.state_dir.parent / "etc").exists()


def test_control_characters_and_device_names_are_removed(victim):
    p = start_attack(victim, "control")
    t = accept_when_offered(victim)
    assert t["name"] == "file-CON.txt"
    assert outcome(p)[-1].startswith("end completed")
    assert files_dir(victim) == ["file-CON.txt"]


def test_an_offer_of_two_to_the_63_bytes_is_refused_at_once(victim):
    p = start_attack(victim, "huge")
    lines = outcome(p)
    assert lines[-1].startswith("end failed") and "exceeds" in lines[-1], lines
    # Listed at the receiver too, failed with the reason the sender was told; nothing kept.
    listed = incoming(victim)
    assert [(t["state"], t["bytesDone"]) for t in listed] == [("failed", 0)], listed
    assert "exceeds" in listed[0]["error"]
    assert files_dir(victim) == []


def test_a_corrupted_chunk_is_refetched_and_the_file_completes(victim):
    p = start_attack(victim, "corrupt-once")
    accept_when_offered(victim)
    lines = outcome(p)
    assert "want 1" in lines, lines  # the re-fetch of the corrupted chunk, not a restart
    assert lines[-1].startswith("end completed"), lines
    assert files_dir(victim) == ["honest.bin"]


def test_a_sender_that_keeps_corrupting_is_refused_and_nothing_is_kept(victim):
    p = start_attack(victim, "corrupt")
    accept_when_offered(victim)
    lines = outcome(p)
    assert lines[-1].startswith("end failed") and "corrupted" in lines[-1], lines
    [t] = incoming(victim)
    assert t["state"] == "failed"
    assert files_dir(victim) == []


def test_a_chunk_bigger_than_offered_closes_the_session(victim):
    p = start_attack(victim, "bigger")
    accept_when_offered(victim)
    assert outcome(p)[-1] == "closed"
    assert not [f for f in files_dir(victim) if not f.endswith(".part")]
    # The daemon is fine.
    assert victim.call("node.status")["name"] == "victim"


def test_a_lying_file_hash_is_refused_and_not_renamed(victim):
    p = start_attack(victim, "lying-hash")
    accept_when_offered(victim)
    lines = outcome(p)
    assert lines[-1].startswith("end failed") and "hash" in lines[-1], lines
    assert files_dir(victim) == []
    assert incoming(victim)[0]["state"] == "failed"


def test_an_offer_whose_file_hash_is_not_its_list_hash_is_refused_at_once(victim):
    # An older Parley's offer: contentHash = BLAKE2b(whole file), which this receiver never
    # computes. Refused before anything is asked or written, with the next step to take.
    p = start_attack(victim, "old-format")
    lines = outcome(p)
    assert lines[-1].startswith("end failed") and "update" in lines[-1], lines
    t = wait_until(lambda: (incoming(victim) or [None])[0], timeout=10, what="the refused offer listed")
    assert t["state"] == "failed" and "update" in t["error"], t
    assert files_dir(victim) == []
