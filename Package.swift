// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

/// Settings every target shares: Swift 6 language mode and explicit `any` for existentials.
let sharedSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "modeld",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "modeld", targets: ["modeld"]),
        .executable(name: "modelctl", targets: ["modelctl"]),
        .library(name: "ModelClient", targets: ["ModelClient"]),
        .library(name: "ModelRemote", targets: ["ModelRemote"]),
        .library(name: "ModelTesting", targets: ["ModelTesting"]),
        .library(name: "ModelClientTesting", targets: ["ModelClientTesting"]),
        .library(name: "ModelCore", targets: ["ModelCore"]),
        .library(name: "ModelStorage", targets: ["ModelStorage"]),
        .library(name: "SQLiteStorage", targets: ["SQLiteStorage"]),
        .library(name: "MemoryStorage", targets: ["MemoryStorage"]),
        .library(name: "ModelEngine", targets: ["ModelEngine"]),
        .library(name: "ModelWire", targets: ["ModelWire"]),
        .library(name: "ModelServer", targets: ["ModelServer"]),
        .library(name: "StandardBackends", targets: ["StandardBackends"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Schema, values, identifiers, predicates, descriptors, change sets, history, errors. No I/O.
        .target(name: "ModelCore", swiftSettings: sharedSettings),
        // The StorageBackend protocol and the registry that opens a backend by URL.
        .target(name: "ModelStorage", dependencies: ["ModelCore"], swiftSettings: sharedSettings),
        // The system's SQLite (Debian: libsqlite3-dev).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // sched_getattr(2) and sched_setattr(2), which glibc does not wrap: the daemon's time slice.
        .systemLibrary(name: "CScheduler"),
        // The system's libedit (Debian: libedit-dev): line editing and history for modelctl shell.
        .systemLibrary(
            name: "CEditLine",
            pkgConfig: "libedit",
            providers: [.apt(["libedit-dev"])]
        ),
        .target(
            name: "SQLiteStorage",
            dependencies: [
                "ModelCore", "ModelStorage", "CSQLite", .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: sharedSettings
        ),
        .target(
            name: "PostgresStorage",
            dependencies: [
                "ModelCore", "ModelStorage", .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: sharedSettings
        ),
        .target(
            name: "MemoryStorage",
            dependencies: ["ModelCore", "ModelStorage"],
            swiftSettings: sharedSettings
        ),
        // The standard backends in one registry (SQLite and memory): what the executables, the
        // embedded container and the tests choose. Nothing above ModelStorage imports a backend.
        .target(
            name: "StandardBackends",
            dependencies: ["ModelStorage", "SQLiteStorage", "MemoryStorage", "PostgresStorage"],
            swiftSettings: sharedSettings
        ),
        // Contexts: pending changes, delete rules, validation, uniqueness, merge policies, history.
        .target(
            name: "ModelEngine",
            dependencies: ["ModelCore", "ModelStorage"],
            swiftSettings: sharedSettings
        ),

        // The wire: protobuf messages and gRPC stubs generated from Protos/ (committed; regenerate
        // with the regenerate-protos plugin), and conversions to and from ModelCore types.
        .target(
            name: "ModelWire",
            dependencies: [
                "ModelCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
            ],
            swiftSettings: sharedSettings
        ),
        // gRPC calls over a Unix socket in modeld's own framing instead of HTTP/2 (both sides).
        .target(
            name: "FramedTransport",
            dependencies: [
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: sharedSettings
        ),
        // The daemon's services: stores, sessions (actors owning contexts), queries, health.
        .target(
            name: "ModelServer",
            dependencies: [
                "ModelCore", "ModelStorage", "ModelEngine", "ModelWire", "FramedTransport",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: sharedSettings
        ),
        // The daemon's operations as Swift calls over its socket, with ModelCore's types.
        .target(
            name: "ModelRemote",
            dependencies: [
                "ModelCore", "ModelWire", "FramedTransport",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ],
            swiftSettings: sharedSettings
        ),
        // SwiftData's shape: @Model classes, ModelContainer and ModelContext over the daemon or an
        // embedded store, FetchDescriptor with #Predicate, history, @ModelActor.
        .target(
            name: "ModelClient",
            dependencies: [
                "ModelMacros", "ModelCore", "ModelEngine", "ModelRemote", "ModelWire", "ModelStorage",
                "StandardBackends",
            ],
            swiftSettings: sharedSettings + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
        ),
        // The macros behind @Model, @Attribute, @Relationship, @Transient, #Unique, #Index, @ModelActor.
        .macro(
            name: "ModelMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
            ],
            swiftSettings: sharedSettings
        ),
        // Isolated stores for every test: an in-process daemon, or the real modeld spawned.
        .target(
            name: "ModelTesting",
            dependencies: [
                "ModelCore", "ModelServer", "ModelRemote", "ModelStorage", "StandardBackends",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: sharedSettings
        ),
        // Child processes, and a real systemd in namespaces of its own, for the end-to-end tests and
        // the bench's installed daemon (not a product).
        .target(name: "SystemdHarness", swiftSettings: sharedSettings),
        // A ModelContainer of its own for each test (daemon, embedded file or memory): ModelClient's
        // side of ModelTesting, apart so that ModelTesting's users need not build the macros.
        .target(
            name: "ModelClientTesting",
            dependencies: ["ModelClient", "ModelTesting"],
            swiftSettings: sharedSettings
        ),
        .executableTarget(
            name: "modeld",
            dependencies: [
                "ModelServer", "ModelCore", "ModelWire", "ManualPages", "StandardBackends", "CScheduler",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: sharedSettings
        ),
        // Man pages written from the executables' command definitions.
        .target(
            name: "ManualPages",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: sharedSettings
        ),
        .executableTarget(
            name: "modeld-bench",
            dependencies: [
                "ModelRemote", "ModelCore", "ModelTesting", "SQLiteStorage", "CSQLite", "ModelFixtures", "ModelWire",
                "SystemdHarness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Sources/modeld-bench",
            swiftSettings: sharedSettings
        ),
        .executableTarget(
            name: "modelctl",
            dependencies: [
                "ModelRemote", "ModelCore", "ModelWire", "ManualPages", "CEditLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: sharedSettings
        ),
        .plugin(
            name: "RegenerateProtos",
            capability: .command(
                intent: .custom(
                    verb: "regenerate-protos", description: "Regenerate Sources/ModelWire/Generated from Protos/"),
                permissions: [
                    .writeToPackageDirectory(
                        reason: "to write the generated Swift files into Sources/ModelWire/Generated")
                ]
            ),
            dependencies: [
                .product(name: "protoc-gen-swift", package: "swift-protobuf"),
                .product(name: "protoc-gen-grpc-swift-2", package: "grpc-swift-protobuf"),
            ]
        ),

        // Schemas shared by the test suites: Apple's SampleTrips, SwiftDataKit's articles, a catalog
        // with every attribute type and relationship kind.
        .target(
            name: "ModelFixtures", dependencies: ["ModelCore", "ModelStorage"], path: "Tests/Fixtures",
            swiftSettings: sharedSettings),

        .testTarget(
            name: "ModelCoreTests", dependencies: ["ModelCore", "ModelFixtures"], swiftSettings: sharedSettings),
        // One suite over the StorageBackend protocol, run against every backend, and the
        // differential test (random predicates: SQLite vs memory).
        .testTarget(
            name: "StorageConformanceTests",
            dependencies: [
                "ModelCore", "ModelStorage", "SQLiteStorage", "MemoryStorage", "PostgresStorage", "ModelFixtures",
            ],
            swiftSettings: sharedSettings
        ),
        .testTarget(
            name: "PostgresStorageTests",
            dependencies: [
                "PostgresStorage", "ModelCore", "ModelStorage", "ModelFixtures",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: sharedSettings
        ),
        .testTarget(
            name: "SQLiteStorageTests",
            dependencies: ["SQLiteStorage", "ModelCore", "ModelStorage", "ModelFixtures"],
            swiftSettings: sharedSettings
        ),
        .testTarget(
            name: "MemoryStorageTests",
            dependencies: ["MemoryStorage", "ModelCore", "ModelStorage", "ModelFixtures"],
            swiftSettings: sharedSettings
        ),
        .testTarget(
            name: "ModelWireTests",
            dependencies: [
                "ModelWire", "ModelCore", "ModelFixtures", .product(name: "GRPCCore", package: "grpc-swift-2"),
            ],
            swiftSettings: sharedSettings
        ),
        // The daemon over a real Unix socket (an in-process daemon per test or per process).
        .testTarget(
            name: "ModelServerTests",
            dependencies: [
                "ModelServer", "ModelRemote", "FramedTransport", "ModelTesting", "ModelWire", "ModelCore",
                "ModelEngine", "ModelStorage",
                "ModelFixtures",
                "StandardBackends",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: sharedSettings
        ),
        // The built modeld executable, spawned as a child process.
        .testTarget(
            name: "ModeldEndToEndTests",
            dependencies: ["ModelRemote", "ModelTesting", "ModelCore", "ModelFixtures", "SystemdHarness", "modeld"],
            swiftSettings: sharedSettings
        ),
        // Crashes, full disks, hostile input, limits, access, conflicts (issue: reliability).
        .testTarget(
            name: "ReliabilityTests",
            dependencies: [
                "ModelRemote", "ModelTesting", "ModelServer", "ModelWire", "ModelCore", "ModelFixtures",
                "SQLiteStorage", "ModelStorage",
                "modeld", "FramedTransport",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: sharedSettings
        ),
        // SwiftData's shape, on the daemon and embedded: models, contexts, predicates, history.
        .testTarget(
            name: "ModelClientTests",
            dependencies: ["ModelClient", "ModelTesting", "ModelClientTesting"],
            swiftSettings: sharedSettings
        ),
        .testTarget(
            name: "ModelMacrosTests",
            dependencies: [
                "ModelMacros",
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftParser", package: "swift-syntax"),
            ],
            swiftSettings: sharedSettings
        ),
        .testTarget(
            name: "ModelEngineTests",
            dependencies: [
                "ModelEngine", "ModelCore", "ModelStorage", "SQLiteStorage", "MemoryStorage", "ModelFixtures",
                "StandardBackends",
            ],
            swiftSettings: sharedSettings
        ),
    ]
)
