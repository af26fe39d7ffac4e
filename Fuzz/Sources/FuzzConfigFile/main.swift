import ParleyConfiguration

/// Arbitrary bytes as parleyd.toml: parsed (invalid UTF-8 is repaired first, as any
/// String the parser can be handed) and, when it parses, applied to a configuration
/// (which checks every key and value) and validated as a whole, as parleyd does.
/// Every step must answer with a `ConfigError`, never trap; the error's text is
/// rendered because parleyd prints it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfigFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        let file = try ConfigFile.parse(text)
        var configuration = DaemonConfiguration(stateDirectory: "/var/lib/parley", hostName: "fuzz-host")
        try file.apply(to: &configuration)
        try configuration.validate()
    } catch {
        _ = error.description
    }
    return 0
}
