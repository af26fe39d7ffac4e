import NIOCore
import NIOPosix
import ParleyControlProtocol
import ParleyNodeCore

#if canImport(Glibc)
    import Glibc
#endif

extension DialDriver {
    /// A connect error in words a user knows ("connection refused"), not NIO's type dump.
    static func describe(_ error: Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        if let c = error as? NIOConnectionError, let first = c.connectionErrors.first {
            return describe(first.error)
        }
        return "\(error)"
    }
}

extension DialAddress {
    init(_ hp: HostPort) { self.init(host: hp.host, port: hp.port) }
}
