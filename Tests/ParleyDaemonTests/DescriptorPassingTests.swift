import Foundation
import ParleyControlProtocol
import XCTest

@testable import ParleyDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// The SCM_RIGHTS codec (`DescriptorRights`), the real sendmsg/recvmsg around it
/// (`DescriptorMessage`) over a socketpair, and the descriptor socket's request reader.
final class DescriptorPassingTests: XCTestCase {
    private func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds), 0)
        return (fds[0], fds[1])
    }

    private func pipePair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        return (fds[0], fds[1])
    }

    func testEncodedControlBytesDecodeToTheSameDescriptors() {
        for count in 1...DescriptorRights.maxDescriptorsPerMessage {
            let fds = (0..<count).map { Int32(100 + $0) }
            let bytes = DescriptorRights.encode(fds)
            XCTAssertEqual(bytes.count, DescriptorRights.space(descriptors: count))
            XCTAssertEqual(DescriptorRights.decode(bytes), .init(descriptors: fds, malformed: false))
        }
        XCTAssertEqual(DescriptorRights.encode([]), [])
        XCTAssertEqual(DescriptorRights.decode([]), .init(descriptors: [], malformed: false))
    }

    func testTheLayoutIsTheKernels() {
        // struct cmsghdr on 64-bit Linux: 8-byte length, level, type; CMSG_SPACE(4) = 24.
        XCTAssertEqual(DescriptorRights.space(descriptors: 1), 24)
        XCTAssertEqual(DescriptorRights.space(descriptors: 2), 24)
        XCTAssertEqual(DescriptorRights.space(descriptors: 3), 32)
        let bytes = DescriptorRights.encode([7])
        XCTAssertEqual(Array(bytes[0..<8]), [20, 0, 0, 0, 0, 0, 0, 0], "cmsg_len = CMSG_LEN(4) = 20")
        XCTAssertEqual(Array(bytes[8..<12]), [1, 0, 0, 0], "SOL_SOCKET")
        XCTAssertEqual(Array(bytes[12..<16]), [1, 0, 0, 0], "SCM_RIGHTS")
        XCTAssertEqual(Array(bytes[16..<20]), [7, 0, 0, 0])
    }

    func testMalformedControlBytesAreFlaggedAndWhatCameBeforeIsKeptForClosing() {
        var bytes = DescriptorRights.encode([5, 6])
        // A length shorter than a header.
        var short = bytes
        short[0] = 4
        XCTAssertTrue(DescriptorRights.decode(short).malformed)
        // A length that runs past the end.
        var long = bytes
        long[0] = 200
        XCTAssertTrue(DescriptorRights.decode(long).malformed)
        // A good message followed by a torn header.
        bytes += DescriptorRights.encode([9]).prefix(10)
        let decoded = DescriptorRights.decode(bytes)
        XCTAssertTrue(decoded.malformed)
        XCTAssertEqual(decoded.descriptors, [5, 6])
    }

    func testOtherControlMessagesAreSkipped() {
        var other = DescriptorRights.encode([1, 2, 3])
        other.withUnsafeMutableBytes {
            $0.storeBytes(of: Int32(2) /* SCM_CREDENTIALS */, toByteOffset: 12, as: Int32.self)
        }
        let both = other + DescriptorRights.encode([42])
        XCTAssertEqual(DescriptorRights.decode(both), .init(descriptors: [42], malformed: false))
    }

    /// A descriptor really crosses: the receiver writes into the pipe it was given.
    func testADescriptorCrossesASocketPair() throws {
        let (a, b) = socketPair()
        defer {
            close(a)
            close(b)
        }
        let (readEnd, writeEnd) = pipePair()
        defer { close(readEnd) }
        let line = Array("hello\n".utf8)
        XCTAssertEqual(
            DescriptorMessage.send(socket: a, bytes: line[...], descriptors: [writeEnd], flags: 0), line.count)
        close(writeEnd)
        let got = try XCTUnwrap(DescriptorMessage.receive(socket: b, maxBytes: 100, maxDescriptors: 4, flags: 0))
        XCTAssertEqual(got.bytes, line)
        XCTAssertEqual(got.descriptors.count, 1)
        XCTAssertFalse(got.descriptorsLost)
        XCTAssertEqual(fcntl(got.descriptors[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC, "received close-on-exec")
        XCTAssertEqual(write(got.descriptors[0], "x", 1), 1)
        DescriptorMessage.closeAll(got.descriptors)
        var byte: UInt8 = 0
        XCTAssertEqual(read(readEnd, &byte, 1), 1)
        XCTAssertEqual(byte, UInt8(ascii: "x"))
    }

    func testMoreDescriptorsThanAllowedAreReportedAndAllClosable() throws {
        let (a, b) = socketPair()
        defer {
            close(a)
            close(b)
        }
        let (readEnd, writeEnd) = pipePair()
        defer {
            close(readEnd)
            close(writeEnd)
        }
        let many = [Int32](repeating: readEnd, count: 6)
        XCTAssertEqual(DescriptorMessage.send(socket: a, bytes: [1][...], descriptors: many, flags: 0), 1)
        let got = try XCTUnwrap(DescriptorMessage.receive(socket: b, maxBytes: 10, maxDescriptors: 4, flags: 0))
        XCTAssertTrue(got.descriptorsLost)
        // Room is kept for one more than allowed (rounded up to the word): the excess is seen.
        XCTAssertGreaterThan(got.descriptors.count, 4)
        DescriptorMessage.closeAll(got.descriptors)
    }

    func testTheRequestReaderTakesDescriptorsOnlyWithTheFirstBytes() throws {
        let (a, b) = socketPair()
        defer {
            close(a)
            close(b)
        }
        let (readEnd, writeEnd) = pipePair()
        defer {
            close(readEnd)
            close(writeEnd)
        }
        XCTAssertEqual(
            DescriptorMessage.send(socket: a, bytes: Array("{\"a\":".utf8)[...], descriptors: [readEnd], flags: 0), 5)
        var reader = DescriptorRequestReader()
        // The first read takes the descriptor; the rest of the line comes with another one.
        XCTAssertEqual(
            DescriptorMessage.send(socket: a, bytes: Array("1}\n".utf8)[...], descriptors: [writeEnd], flags: 0), 3)
        // Stream sockets do not merge segments that carry descriptors, so the reader sees two.
        guard case .failure(let error) = reader.read(b) else { return XCTFail("a late descriptor was accepted") }
        XCTAssertTrue(error.message.contains("first bytes"), error.message)
        XCTAssertEqual(reader.descriptors.count, 2, "both kept, to be closed")
        DescriptorMessage.closeAll(reader.descriptors)
    }

    func testTheRequestReaderReturnsTheLineAndItsDescriptors() throws {
        let (a, b) = socketPair()
        defer {
            close(a)
            close(b)
        }
        let (readEnd, writeEnd) = pipePair()
        defer {
            close(readEnd)
            close(writeEnd)
        }
        let line = Array("{\"x\":1}\n".utf8)
        XCTAssertEqual(
            DescriptorMessage.send(socket: a, bytes: line[...], descriptors: [readEnd, writeEnd], flags: 0), line.count)
        var reader = DescriptorRequestReader()
        XCTAssertEqual(try reader.read(b).get(), Array("{\"x\":1}".utf8))
        XCTAssertEqual(reader.descriptors.count, 2)
        DescriptorMessage.closeAll(reader.descriptors)
    }

    func testAnOverlongRequestIsRefused() {
        let (a, b) = socketPair()
        defer {
            close(a)
            close(b)
        }
        let writer = Thread {
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 8192)
            for _ in 0..<((DescriptorServer.maxRequestBytes / chunk.count) + 2) {
                var off = 0
                while off < chunk.count {
                    let n = chunk.withUnsafeBytes {
                        send(a, $0.baseAddress! + off, chunk.count - off, Int32(MSG_NOSIGNAL))
                    }
                    if n <= 0 { return }
                    off += n
                }
            }
        }
        writer.start()
        var reader = DescriptorRequestReader()
        guard case .failure(let error) = reader.read(b) else { return XCTFail("an overlong line was accepted") }
        XCTAssertEqual(error.code, JSONRPCError.lineTooLong().code)
    }
}
