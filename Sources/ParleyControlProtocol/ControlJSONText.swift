import Foundation

/// Turns one received line into a `JSONValue`, with the checks every line gets whichever
/// side reads it: valid UTF-8, bounded nesting, well-formed JSON.
enum ControlJSONText {
    static func decode(line: [UInt8]) -> Result<JSONValue, JSONRPCError> {
        guard String(validating: line, as: UTF8.self) != nil else {
            return .failure(.parseError("the line is not valid UTF-8"))
        }
        do {
            return .success(try JSONTextParser.parse(line, maxDepth: ControlLimits.maxNestingDepth))
        } catch .tooDeep(let limit) {
            return .failure(.parseError("JSON nested deeper than \(limit) levels"))
        } catch {
            return .failure(.parseError("the line is not a JSON value"))
        }
    }
}
