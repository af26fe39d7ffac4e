// swift-tools-version:5.4
import PackageDescription

// libFuzzer targets for Parley's parsers of untrusted input. A separate package so the
// main build never sees the sanitizer flags; build and run it with scripts/fuzz.sh
// (`make fuzz`), which passes `-sanitize=fuzzer,address -parse-as-library`.
//
// Each target is an executable whose main.swift defines only the libFuzzer entry point
// `LLVMFuzzerTestOneInput`; libFuzzer's runtime provides `main`. The tools version is
// 5.4 on purpose (as in swift-protobuf's FuzzTesting): from 5.5 on, SwiftPM renames an
// executable's entry point to `<Target>_main` and links `main` to it, which fails when
// the entry point is libFuzzer's. The fuzz code is still compiled in Swift 6 mode.
let package = Package(
    name: "ParleyFuzz",
    platforms: [.macOS("14.0")],
    dependencies: [
        // Named explicitly: a path dependency's identity is otherwise its directory name,
        // which differs between checkouts and worktrees.
        .package(name: "Parley", path: ".."),
    ],
    targets: [
        .executableTarget(name: "FuzzFrameDecoder", dependencies: [
            .product(name: "ParleyCore", package: "Parley"),
        ]),
        .executableTarget(name: "FuzzHandshakeResponder", dependencies: [
            "FuzzFixtures",
            .product(name: "ParleyCore", package: "Parley"),
        ]),
        .executableTarget(name: "FuzzCardDecoder", dependencies: [
            .product(name: "ParleyCore", package: "Parley"),
        ]),
        .executableTarget(name: "FuzzAppRecord", dependencies: [
            .product(name: "ParleyCore", package: "Parley"),
        ]),
        .executableTarget(name: "FuzzJSONRPC", dependencies: [
            .product(name: "ParleyControlProtocol", package: "Parley"),
        ]),
        // parley web: a WebSocket message and an HTTP request's facts (docs/WEB.md).
        .executableTarget(name: "FuzzWebRelay", dependencies: [
            .product(name: "ParleyControlProtocol", package: "Parley"),
            .product(name: "ParleyWebCore", package: "Parley"),
        ]),
        .executableTarget(name: "FuzzConfigFile", dependencies: [
            .product(name: "ParleyConfiguration", package: "Parley"),
        ]),
        // Fixed keys and cards shared by the handshake target and the seed generator.
        .target(name: "FuzzFixtures", dependencies: [
            .product(name: "ParleyCore", package: "Parley"),
        ]),
        // Writes Corpus/<Target>/ seeds from real encoders (a normal executable: it is
        // built without the sanitizer flags; see scripts/fuzz.sh --seeds).
        .executableTarget(name: "MakeSeeds", dependencies: [
            "FuzzFixtures",
            .product(name: "ParleyCore", package: "Parley"),
            .product(name: "ParleyControlProtocol", package: "Parley"),
        ]),
    ],
    swiftLanguageVersions: [.version("6")]
)
