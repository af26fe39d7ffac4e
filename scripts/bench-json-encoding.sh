#!/usr/bin/env bash
# Times the control socket's per-message JSON encodings two ways: CanonicalJSON (the
# generic canonical encoder for envelopes, hand-written MessageInfo) and Foundation's
# JSONEncoder (what would remain if the generic canonical path were deleted), and checks
# they give the same bytes. Compiles ParleyControlProtocol with -O into one executable
# (no SwiftPM, no other module); docs/BENCHMARKS.md cites its numbers.
#
#   scripts/bench-json-encoding.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/main.swift" <<'EOF'
import Foundation

let info = MessageInfo(id: "0123456789abcdef0123456789abcdef", from: "ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ23-4567",
                       fromName: "alice", to: "BCDE-FGHI-JKLM-NOPQ-RSTU-VWXY-Z234-5678", toName: "bob",
                       direction: .outgoing, sequence: 42, createdAt: 1_700_000_000_000,
                       body: String(repeating: "x", count: 64), state: .queued, deliveredAt: nil, cursor: 1234)
let success = JSONRPCTypedSuccess(id: .number(7), result: MessagesSendResult(message: info))
let delivered = MessageDeliveredEvent(id: info.id, to: info.to, deliveredAt: 1_700_000_000_123)

func time(_ label: String, _ body: () throws -> [UInt8]) rethrows -> [UInt8] {
    var last: [UInt8] = []
    for _ in 0..<1_000 { last = try body() }
    let n = 100_000
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<n { last = try body() }
    let us = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(n) / 1_000
    print(label.padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%7.2f µs", us))
    return last
}

let encoder = ControlJSON.encoder()
let a = try time("messages.send answer, CanonicalJSON") { try CanonicalJSON.encode(success) }
let b = try time("messages.send answer, Foundation JSONEncoder") { Array(try encoder.encode(success)) }
precondition(a == b, "the two encodings differ")
let c = try time("message.delivered params, CanonicalJSON") { try CanonicalJSON.encode(delivered) }
let d = try time("message.delivered params, Foundation JSONEncoder") { Array(try encoder.encode(delivered)) }
precondition(c == d, "the two encodings differ")
EOF
if ! "${SWIFTC:-swiftc}" -O -module-name ParleyControlProtocol Sources/ParleyControlProtocol/*.swift \
     "$work/main.swift" -o "$work/bench" >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  exit 2
fi
"$work/bench"
