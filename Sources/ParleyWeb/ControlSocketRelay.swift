import Foundation
import HummingbirdWebSocket
import NIOCore
import NIOPosix
import ParleyControlProtocol
import ParleyWebCore

/// One WebSocket's relay to the daemon: its own connection to the control socket, requests
/// from the page checked by `WebRelay` and written as lines, every line the daemon sends
/// (answers and notifications) passed to the page as one text message. Either side closing
/// ends both. It starts only after the page signed in (`WebSocketSignIn`), on the same
/// stream of messages.
struct ControlSocketRelay {
    let controlSocketPath: String
    /// Which window this WebSocket belongs to: the methods it may call.
    let window: WebWindow

    func run(messages: PageMessages, outbound: WebSocketOutboundWriter) async {
        let daemon: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            daemon = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: controlSocketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            // The page shows the close reason (at most 123 bytes in a close frame).
            try? await outbound.close(.unexpectedServerError, reason: "cannot reach parleyd: is it running?")
            return
        }
        do {
            try await daemon.executeThenClose { daemonIn, daemonOut in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var lines = LineBuffer(maxLineBytes: WebLimits.maxDaemonLineBytes)
                        for try await buffer in daemonIn {
                            lines.append(buffer.readableBytesView)
                            while let line = try lines.popLine() {
                                try await outbound.write(.text(String(decoding: line, as: UTF8.self)))
                            }
                        }
                    }
                    group.addTask {
                        var rate = WebRateLimit(now: WebClock.now())
                        while let message = try await messages.next() {
                            let bytes: [UInt8]
                            switch message {
                            case .text(let text): bytes = Array(text.utf8)
                            // JSON-RPC is text; a binary message is read as its bytes, so it
                            // gets the same parse error a bad text would.
                            case .binary(let buffer): bytes = Array(buffer.readableBytesView)
                            }
                            switch WebRelay.decide(
                                message: bytes, rateAllows: rate.take(now: WebClock.now()), window: window)
                            {
                            case .forward(let line):
                                try await daemonOut.write(ByteBuffer(bytes: line + [0x0A]))
                            case .answer(let line):
                                try await outbound.write(.text(String(decoding: line, as: UTF8.self)))
                            }
                        }
                    }
                    // Whichever side ends first (the page closed, the daemon went away) ends both.
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            try? await outbound.close(.unexpectedServerError, reason: "connection to parleyd ended")
        }
    }
}

/// The page's WebSocket messages, read first by the sign-in and then by the relay. A class
/// so the one iterator can be handed from one child task to the next; never read by two at
/// once (the sign-in has ended, or been cancelled and awaited, before the relay starts).
final class PageMessages: @unchecked Sendable {
    private var iterator: WebSocketInboundMessageStream.AsyncIterator

    init(_ inbound: WebSocketInboundStream) {
        iterator = inbound.messages(maxSize: WebLimits.maxWebSocketMessageBytes).makeAsyncIterator()
    }

    func next() async throws -> WebSocketMessage? { try await iterator.next() }
}
