/// Named node settings (the signed card, the chosen name): the seam `OwnIdentity` depends
/// on, one small protocol per concern as libsignal's storage traits are. Keys are names
/// chosen in code.
public protocol SettingsStore: AnyObject {
    func setting(_ key: String) throws(StoreError) -> String?
    /// Stores `value` under `key`; nil removes the key.
    func setSetting(_ key: String, _ value: String?) throws(StoreError)
}

extension Store: SettingsStore {}
