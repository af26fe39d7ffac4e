/// Which instance names the browser currently reports, and on which interfaces.
///
/// avahi reports an instance once per interface and IP protocol it was seen on, and
/// removes each separately: a name is present until all its sightings are removed.
/// Pure, so its counting is tested without a network.
struct BrowsePresence {
    /// At most this many instances are tracked (each tracked instance costs one resolver:
    /// a D-Bus client and a thread in the avahi compat library). A LAN chat has far
    /// fewer peers; sightings past the limit are ignored until others go away.
    static let maxInstances = 128

    private var sightings: [String: [UInt32: Int]] = [:]

    /// Records a sighting; true if `name` was not present before.
    mutating func add(_ name: String, interface: UInt32) -> Bool {
        if sightings[name] == nil {
            guard sightings.count < Self.maxInstances else { return false }
            sightings[name] = [interface: 1]
            return true
        }
        sightings[name, default: [:]][interface, default: 0] += 1
        return false
    }

    /// Removes a sighting; true if `name` was present and no sighting is left.
    mutating func remove(_ name: String, interface: UInt32) -> Bool {
        guard var perInterface = sightings[name], let count = perInterface[interface] else { return false }
        perInterface[interface] = count > 1 ? count - 1 : nil
        sightings[name] = perInterface.isEmpty ? nil : perInterface
        return perInterface.isEmpty
    }

    func contains(_ name: String) -> Bool { sightings[name] != nil }

    /// The interfaces `name` is currently seen on, lowest index first.
    func interfaces(of name: String) -> [UInt32] { (sightings[name] ?? [:]).keys.sorted() }

    var names: [String] { Array(sightings.keys) }

    mutating func removeAll() { sightings.removeAll() }
}
