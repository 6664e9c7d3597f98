// swift-tools-version: 6.1
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
        .library(name: "ModelCore", targets: ["ModelCore"]),
        .library(name: "ModelStorage", targets: ["ModelStorage"]),
        .library(name: "SQLiteStorage", targets: ["SQLiteStorage"]),
        .library(name: "MemoryStorage", targets: ["MemoryStorage"]),
        .library(name: "ModelEngine", targets: ["ModelEngine"]),
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
        .target(
            name: "SQLiteStorage",
            dependencies: ["ModelCore", "ModelStorage", "CSQLite"],
            swiftSettings: sharedSettings
        ),
        .target(
            name: "MemoryStorage",
            dependencies: ["ModelCore", "ModelStorage"],
            swiftSettings: sharedSettings
        ),
        // Contexts: pending changes, delete rules, validation, uniqueness, merge policies, history.
        .target(
            name: "ModelEngine",
            dependencies: ["ModelCore", "ModelStorage", "SQLiteStorage", "MemoryStorage"],
            swiftSettings: sharedSettings
        ),

        // Schemas shared by the test suites: Apple's SampleTrips, SwiftDataKit's articles, a catalog
        // with every attribute type and relationship kind.
        .target(name: "ModelFixtures", dependencies: ["ModelCore"], path: "Tests/Fixtures", swiftSettings: sharedSettings),

        .testTarget(name: "ModelCoreTests", dependencies: ["ModelCore", "ModelFixtures"], swiftSettings: sharedSettings),
        // One suite over the StorageBackend protocol, run against every backend, and the
        // differential test (random predicates: SQLite vs memory).
        .testTarget(
            name: "StorageConformanceTests",
            dependencies: ["ModelCore", "ModelStorage", "SQLiteStorage", "MemoryStorage", "ModelFixtures"],
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
            name: "ModelEngineTests",
            dependencies: ["ModelEngine", "ModelCore", "ModelStorage", "SQLiteStorage", "MemoryStorage", "ModelFixtures"],
            swiftSettings: sharedSettings
        ),
    ]
)
