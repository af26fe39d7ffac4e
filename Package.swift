// swift-tools-version:6.1
import PackageDescription

// Parley: end-to-end encrypted LAN chat. See docs/ARCHITECTURE.md for the module map.
let package = Package(
    name: "Parley",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "parleyd", targets: ["parleyd"]),
        .executable(name: "parley", targets: ["parley"]),
        .executable(name: "parley-mdns", targets: ["parley-mdns"]),
        .library(name: "ParleyCore", targets: ["ParleyCore"]),
        // For the fuzz package (Fuzz/), which can only reach this package through products.
        .library(name: "ParleyControlProtocol", targets: ["ParleyControlProtocol"]),
        // For the fuzz package: parleyd.toml's parser and the configuration it fills.
        .library(name: "ParleyConfiguration", targets: ["ParleyConfiguration"]),
        // For the fuzz package: the web client's request and relay decisions.
        .library(name: "ParleyWebCore", targets: ["ParleyWebCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // HeapModule: the priority queues of room resolution's rule 5 and the room simulation's
        // events (already in the graph through swift-nio).
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // `parley web` only (the ParleyWeb target): the local HTTP + WebSocket server.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
    ],
    targets: [
        // C libraries from Debian: libsodium-dev, libavahi-compat-libdnssd-dev.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(
            name: "CDNSSD",
            pkgConfig: "avahi-compat-libdns_sd",
            providers: [.apt(["libavahi-compat-libdnssd-dev"])]),

        // The thumbnail child's confinement: Landlock and a seccomp filter (Debian's
        // libseccomp-dev) applied between fork and execve, which Swift cannot do.
        .target(name: "CConfinedSpawn", linkerSettings: [.linkedLibrary("seccomp")]),
        // `sqlite3_config`, which is variadic (Swift cannot call it): the store turns
        // SQLite's memory statistics off (Store.swift, docs/BENCHMARKS.md issue 32 part 6).
        .systemLibrary(name: "CSQLiteConfig"),

        // Pure core: keys, cards, Noise, framing, wire messages. No I/O.
        .target(
            name: "ParleyCore",
            dependencies: ["CSodium", .product(name: "HeapModule", package: "swift-collections")]),
        // The node's decisions (send window, session table, dialling, trust, room
        // distribution, admission): pure values that take events and return actions, with
        // the clock and randomness injected. No NIO, no GRDB, no clock reads.
        .target(name: "ParleyNodeCore", dependencies: ["ParleyCore"]),
        // Durable state: SQLite through GRDB (and SQLite's C API for the per-message
        // inserts' parameters: Store+DirectBinding.swift).
        .target(name: "ParleyStore", dependencies: [
            "ParleyCore",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            "CSQLiteConfig",
        ]),
        // JSON-RPC 2.0 types shared by the daemon and the CLI.
        .target(name: "ParleyControlProtocol"),
        // mDNS/DNS-SD through avahi's dns_sd compat library.
        .target(name: "ParleyDiscovery", dependencies: ["CDNSSD", "ParleyCore"]),
        // parleyd's options: defaults, parleyd.toml (parsed by hand, bounded), flags, and
        // their validation. No I/O but reading the file; no NIO, so the fuzz package's
        // FuzzConfigFile builds without the daemon's networking stack.
        .target(name: "ParleyConfiguration", dependencies: [
            "ParleyControlProtocol", "ParleyNodeCore", "ParleyCore",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The daemon: peer sessions, control server.
        .target(name: "ParleyDaemon", dependencies: [
            "ParleyCore", "ParleyNodeCore", "ParleyStore", "ParleyControlProtocol", "ParleyDiscovery",
            "ParleyConfiguration", "CConfinedSpawn",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),
        .executableTarget(name: "parleyd", dependencies: [
            "ParleyDaemon", "ParleyConfiguration", "ParleyNodeCore", "ParleyStore",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // A hostile peer for the adversarial system tests (not installed).
        .executableTarget(name: "parley-adversary", dependencies: ["ParleyCore"]),
        // `parley web`'s decisions (docs/WEB.md): the sign-in, Host/Origin checks, what a
        // WebSocket message may do, headers; and the page's assets, compiled in
        // (WebAssets+Generated.swift, scripts/gen-web-assets.py). Pure: no NIO, no clock read.
        .target(name: "ParleyWebCore", dependencies: ["ParleyControlProtocol", "CSodium"], exclude: ["Assets"]),
        // `parley web`: the browser chat's server (Hummingbird), a client of the control socket.
        .target(name: "ParleyWeb", dependencies: [
            "ParleyWebCore", "ParleyControlProtocol",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ]),
        .executableTarget(name: "parley", dependencies: [
            "ParleyControlProtocol", "ParleyCore", "ParleyWeb",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Operator and lab tool: "is discovery working on this host?"
        .executableTarget(name: "parley-mdns", dependencies: ["ParleyDiscovery"]),

        // A seeded generator (SplitMix64) for reproducible tests and benchmark data; no
        // product target depends on it.
        .target(name: "SeededRandom"),
        // In-process rooms of many members that sync (the real ParleyNodeCore rules, a
        // simulated network and a mock clock), for RoomScaleTests and parley-bench row 14; no
        // product target depends on it.
        .target(
            name: "RoomSyncSimulation",
            dependencies: [
                "ParleyCore", "ParleyNodeCore", "SeededRandom",
                .product(name: "HeapModule", package: "swift-collections"),
            ]),

        // `make bench`: Parley's figures beside their references (docs/BENCHMARKS.md).
        .executableTarget(name: "parley-bench", dependencies: [
            "ParleyCore", "ParleyStore", "ParleyControlProtocol", "CSodium", "SeededRandom",
            "ParleyNodeCore", "RoomSyncSimulation",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        .testTarget(name: "ParleyCoreTests", dependencies: ["ParleyCore", "SeededRandom"],
                    resources: [.copy("Fixtures")]),
        .testTarget(name: "ParleyNodeCoreTests", dependencies: [
            "ParleyNodeCore", "ParleyCore", "SeededRandom", "RoomSyncSimulation"]),
        .testTarget(name: "ParleyStoreTests", dependencies: [
            "ParleyStore", "ParleyCore", .product(name: "GRDB", package: "GRDB.swift")]),
        // Pure pieces of the CLI (chat view, export format).
        .testTarget(name: "ParleyCLITests", dependencies: ["parley"]),
        // The web client's pure parts: token, Host/Origin/cookie checks, method policy, headers;
        // the write-stall handler on an embedded channel (its own clock).
        .testTarget(name: "ParleyWebTests", dependencies: [
            "ParleyWebCore", "ParleyWeb", "ParleyControlProtocol",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "ParleyDaemonTests", dependencies: [
            "ParleyDaemon", "ParleyConfiguration", "ParleyCore", "ParleyNodeCore", "ParleyStore",
            "ParleyControlProtocol", "ParleyDiscovery", "SeededRandom",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
