import NIOCore
import NIOEmbedded
import ParleyWebCore
import XCTest

@testable import ParleyWeb

/// `WebWriteStallHandler` on an embedded channel with its own clock: a connection whose
/// client stopped reading (the channel unwritable) is closed after the stall time, and only
/// then; any progress starts the clock afresh.
final class WebWriteStallHandlerTests: XCTestCase {
    private let stall = TimeAmount.seconds(WebLimits.responseWriteStallSeconds)

    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WebWriteStallHandler(timeout: stall))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        XCTAssertTrue(channel.isActive)
        return channel
    }

    private func setWritable(_ channel: EmbeddedChannel, _ writable: Bool) {
        channel.isWritable = writable
        channel.pipeline.fireChannelWritabilityChanged()
    }

    func testAClientThatStoppedReadingIsCutOffAfterTheStallTime() throws {
        let channel = try channel()
        setWritable(channel, false)
        channel.embeddedEventLoop.advanceTime(by: stall - .seconds(1))
        XCTAssertTrue(channel.isActive, "still within the stall time")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive, "no progress for the stall time: closed")
    }

    func testProgressStartsTheClockAfresh() throws {
        let channel = try channel()
        for _ in 0..<5 {
            setWritable(channel, false)
            channel.embeddedEventLoop.advanceTime(by: stall - .seconds(1))
            setWritable(channel, true)
        }
        XCTAssertTrue(channel.isActive, "a slow reader that keeps reading is not cut off")
        channel.embeddedEventLoop.advanceTime(by: stall * 3)
        XCTAssertTrue(channel.isActive, "writable (nothing waiting): no clock")
        _ = try channel.finish()
    }
}
