import Foundation
import ParleyControlProtocol
import ParleyWebCore

/// Deletes staged uploads once `WebStagingCleanup` says so, woken by the daemon's own
/// events rather than by polling: a thread of its own holds a subscribed control
/// connection, and each `file.completed|failed|cancelled` event (or, as a backstop and for
/// the age bound, `WebLimits.stagingSweepIntervalSeconds` without one) starts a sweep
/// that asks `files.list {id}` for each staged transfer on the same connection. An idle
/// `parley web` so costs the daemon no wake-ups. `ControlClient` blocks, hence the thread;
/// it lives as long as the process.
final class WebStagingJanitor: Sendable {
    let staging: WebUploadStaging
    let socketPath: String

    init(staging: WebUploadStaging, socketPath: String) {
        self.staging = staging
        self.socketPath = socketPath
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "parley-web-staging"
        thread.start()
    }

    private func run() {
        while true {
            if let client = try? ControlClient.connect(path: socketPath, callTimeout: WebDaemonCall.listTimeout) {
                watch(client)
                client.close()
            } else {
                // No daemon: only the age bound can be applied (nothing says a transfer ended).
                staging.sweep(states: [:], nowMs: WebServer.wallClockMs())
            }
            Thread.sleep(forTimeInterval: Double(WebLimits.stagingReconnectSeconds))
        }
    }

    /// Sweeps once, then on every event that ends a transfer, until the connection ends.
    private func watch(_ client: ControlClient) {
        do throws(ControlClientError) {
            _ = try client.call(MessagesSubscribeParams())
        } catch {
            return
        }
        sweep(using: client)
        while true {
            do throws(ControlClientError) {
                let event = try client.readNotification(timeout: .seconds(WebLimits.stagingSweepIntervalSeconds))
                if event.method == ControlEvent.subscriptionClosed { return }
                guard WebStagingCleanup.sweepingEvents.contains(event.method) else { continue }
            } catch {
                guard case .timedOut = error else { return }
            }
            sweep(using: client)
        }
    }

    private func sweep(using client: ControlClient) {
        var states: [String: String?] = [:]
        for id in staging.transferIDsToCheck {
            guard let result = try? client.call(FilesListParams(limit: 1, id: id)) else { continue }
            states[id] = .some(result.transfers.first(where: { $0.id == id })?.state)
        }
        staging.sweep(states: states, nowMs: WebServer.wallClockMs())
    }
}
