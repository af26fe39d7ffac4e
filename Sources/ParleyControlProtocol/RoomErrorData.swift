/// One room a selector could mean, in `RoomAmbiguousData`.
public struct RoomCandidate: Codable, Sendable, Hashable {
    public var id: String
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// `data` of `roomAmbiguous`: the rooms the selector matched.
public struct RoomAmbiguousData: Codable, Sendable, Hashable {
    public var candidates: [RoomCandidate]

    public init(candidates: [RoomCandidate]) { self.candidates = candidates }
}

extension JSONRPCError {
    public static func roomNotFound(_ selector: String) -> JSONRPCError {
        JSONRPCError(.roomNotFound, "no room matches \(quoted(selector))")
    }

    public static func roomAmbiguous(_ selector: String, candidates: [RoomCandidate]) -> JSONRPCError {
        JSONRPCError(
            .roomAmbiguous, "\(quoted(selector)) matches \(candidates.count) rooms",
            payload: RoomAmbiguousData(candidates: candidates))
    }
}
