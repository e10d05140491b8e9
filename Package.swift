// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// Generated code (swift-openapi-generator's) states its imports' access itself.
let generatedSwiftSettings: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

// The products of the packages we depend on, named once.
let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let asyncHTTPClient = Target.Dependency.product(name: "AsyncHTTPClient", package: "async-http-client")
let asn1 = Target.Dependency.product(name: "SwiftASN1", package: "swift-asn1")
let compressNIO = Target.Dependency.product(name: "CompressNIO", package: "compress-nio")
let configuration = Target.Dependency.product(name: "Configuration", package: "swift-configuration")
let crypto = Target.Dependency.product(name: "Crypto", package: "swift-crypto")
let httpTypes = Target.Dependency.product(name: "HTTPTypes", package: "swift-http-types")
let hummingbird = Target.Dependency.product(name: "Hummingbird", package: "hummingbird")
let hummingbirdCore = Target.Dependency.product(name: "HummingbirdCore", package: "hummingbird")
let hummingbirdTesting = Target.Dependency.product(name: "HummingbirdTesting", package: "hummingbird")
let hummingbirdWSClient = Target.Dependency.product(name: "HummingbirdWSClient", package: "hummingbird-websocket")
let hummingbirdWSCompression = Target.Dependency.product(name: "HummingbirdWSCompression", package: "hummingbird-websocket")
let jwtKit = Target.Dependency.product(name: "JWTKit", package: "jwt-kit")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let mcp = Target.Dependency.product(name: "MCP", package: "swift-sdk")
let metrics = Target.Dependency.product(name: "Metrics", package: "swift-metrics")
let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioConcurrencyHelpers = Target.Dependency.product(name: "NIOConcurrencyHelpers", package: "swift-nio")
let nioHPACK = Target.Dependency.product(name: "NIOHPACK", package: "swift-nio-http2")
let nioHTTP2 = Target.Dependency.product(name: "NIOHTTP2", package: "swift-nio-http2")
let nioSSH = Target.Dependency.product(name: "NIOSSH", package: "swift-nio-ssh")
let nioSSL = Target.Dependency.product(name: "NIOSSL", package: "swift-nio-ssl")
let nioHTTPTypes = Target.Dependency.product(name: "NIOHTTPTypes", package: "swift-nio-extras")
let nioHTTPTypesHTTP1 = Target.Dependency.product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras")
let nioEmbedded = Target.Dependency.product(name: "NIOEmbedded", package: "swift-nio")
let nioFoundationCompat = Target.Dependency.product(name: "NIOFoundationCompat", package: "swift-nio")
let nioHTTP1 = Target.Dependency.product(name: "NIOHTTP1", package: "swift-nio")
let nioPosix = Target.Dependency.product(name: "NIOPosix", package: "swift-nio")
let nioWebSocket = Target.Dependency.product(name: "NIOWebSocket", package: "swift-nio")
let openAPIHummingbird = Target.Dependency.product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird")
let openAPIAsyncHTTPClient = Target.Dependency.product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client")
let openAPIRuntime = Target.Dependency.product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")
let postgresNIO = Target.Dependency.product(name: "PostgresNIO", package: "postgres-nio")
/// postgres-nio's pool, for the errors its `PostgresClient` throws unwrapped (a cancelled wait, a
/// pool shut down). An underscored product: a postgres-nio release that renames it breaks the
/// build (loudly), and ServiceHTTPTests' cancellation tests say whether the errors still match.
let postgresPool = Target.Dependency.product(name: "_ConnectionPoolModule", package: "postgres-nio")
let prometheus = Target.Dependency.product(name: "Prometheus", package: "swift-prometheus")
let serviceLifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let swiftProtobuf = Target.Dependency.product(name: "SwiftProtobuf", package: "swift-protobuf")
let systemPackage = Target.Dependency.product(name: "SystemPackage", package: "swift-system")
let x509 = Target.Dependency.product(name: "X509", package: "swift-certificates")

/// The services, one line each: its library target (the service, in `Sources/<target>`) and
/// what the library depends on beyond Contracts and ServiceKit. One
/// executable, `swarmdeckd`, runs any of them (`swarmdeckd ingest`), through
/// `ServiceRegistry.all` (`Sources/SwarmdeckServices`).
let services: [(target: String, dependencies: [Target.Dependency], exclude: [String])] = [
    ("Ingest", ["EventLog", "OTLP", compressNIO, crypto, metrics, swiftProtobuf], []),
    ("StreamFanout", ["EventLog", metrics, prometheus, nioCore, nioWebSocket, serviceLifecycle, swiftProtobuf], []),
    (
        "ControlAPI",
        [
            "AgentChannelContract", "ControlAPIContract", "EventLog", asyncHTTPClient, crypto, jwtKit, openAPIHummingbird, openAPIRuntime,
            serviceLifecycle,
            swiftProtobuf,
        ],
        []
    ),
    (
        "Approvals", ["ApprovalsContract", crypto, openAPIHummingbird, openAPIRuntime, serviceLifecycle, swiftProtobuf],
        []
    ),
    (
        "HealthMonitor",
        ["EventLog", "HealthMonitorContract", metrics, openAPIHummingbird, openAPIRuntime, serviceLifecycle, swiftProtobuf],
        []
    ),
    ("Notifier", ["APNs", "NotifierContract", crypto, metrics, openAPIHummingbird, openAPIRuntime, serviceLifecycle], []),
    (
        "TerminalBroker",
        [
            "TerminalBrokerContract", crypto, metrics, nioCore, nioPosix, nioSSH, nioWebSocket, openAPIHummingbird,
            openAPIRuntime, serviceLifecycle,
        ],
        []
    ),
    (
        "PipelineRunner",
        [
            "Anthropic", "PipelineRunnerContract", asyncHTTPClient, metrics, nioCore, nioFoundationCompat, openAPIHummingbird, openAPIRuntime,
            serviceLifecycle, swiftProtobuf,
        ],
        []
    ),
]

/// A service's library target.
func serviceTarget(_ target: String, dependencies: [Target.Dependency], exclude: [String]) -> Target {
    .target(
        name: target,
        dependencies: ["Contracts", "ServiceKit", configuration, hummingbird, logging, postgresNIO] + dependencies,
        exclude: exclude,
        swiftSettings: swiftSettings
    )
}

/// A service's tests in two targets with the same dependencies: `<name>UnitTests`, its pure
/// logic, which needs nothing started (`swift test --filter UnitTests`), and `<name>Tests`, its
/// live tests against real NATS and Postgres (scripts/with-infra), starting services through
/// `ServiceHarnesses`. Fuzzes, crashes and loads have targets of their own.
func testTargets(_ name: String, dependencies: [Target.Dependency], exclude: [String] = []) -> [Target] {
    [
        .testTarget(name: "\(name)UnitTests", dependencies: dependencies, swiftSettings: swiftSettings),
        .testTarget(name: "\(name)Tests", dependencies: dependencies + ["ServiceHarnesses"], exclude: exclude, swiftSettings: swiftSettings),
    ]
}

let splitTestTargets: [Target] =
    [
        testTargets(
            "ControlAPI",
            dependencies: [
                "Contracts", "ControlAPI", "EventLog", "Ingest", "StreamFanout", "ServiceKit", "StreamTestSupport", "SwarmdeckTools", "TestSupport",
                asyncHTTPClient, configuration, hummingbird,
                hummingbirdTesting, jwtKit, logging, nioCore, nioPosix, openAPIRuntime, postgresNIO,
            ]
        ),
        testTargets(
            "Fanout",
            dependencies: [
                "Contracts", "EventLog", "Ingest", "PlainWebSocket", "ServiceKit", "StreamFanout", "StreamTestSupport", "TestSupport",
                configuration, hummingbird, hummingbirdTesting, hummingbirdWSClient, hummingbirdWSCompression, logging, nioCore, nioPosix,
                postgresNIO,
            ]
        ),
        testTargets(
            "Ingest",
            dependencies: [
                "Contracts", "EventLog", "Ingest", "OTLP", "ServiceKit", "TestSupport", asyncHTTPClient, configuration, crypto, hummingbird,
                hummingbirdTesting, nioCore, postgresNIO,
            ]
        ),
        testTargets(
            "Approvals",
            dependencies: [
                "Approvals", "ApprovalsContract", "Contracts", "ControlAPI", "EventLog", "Ingest", "ServiceKit", "StreamFanout", "StreamTestSupport",
                "TestSupport", hummingbird, hummingbirdTesting, logging, nioCore, postgresNIO,
            ]
        ),
        testTargets(
            "HealthMonitor",
            dependencies: [
                "Approvals", "Contracts", "ControlAPI", "EventLog", "HealthMonitor", "HealthMonitorContract", "Ingest", "ServiceKit", "StreamFanout",
                "StreamTestSupport", "TestSupport", hummingbird, hummingbirdTesting, logging, nioCore, postgresNIO,
            ],
            // The OpenTelemetry SDK client the live tests run with Python.
            exclude: ["claude-code-otel.py"]
        ),
        testTargets(
            "Agent",
            dependencies: [
                "AgentChannelContract", "AnthropicLocal", "Approvals", "ApprovalsContract", "Contracts", "ControlAPI", "ControlAPIContract",
                "HealthMonitor",
                "HealthMonitorContract", "Ingest", "NotifierContract", "OTLP", "PipelineRunnerContract", "ServiceKit", "StreamTestSupport",
                "TelemetryRelay", "TerminalBroker", "TerminalBrokerContract", "TestSupport", asyncHTTPClient, hummingbird, hummingbirdTesting,
                logging, nioCore, postgresNIO, swiftProtobuf, "StreamFanout", "SwarmdeckServices", "SwarmdeckTools",
            ]
        ),
        testTargets(
            "Notifier",
            dependencies: [
                "APNs", "APNsLocal", "Approvals", "Contracts", "ControlAPI", "HealthMonitor", "Ingest", "Notifier", "ServiceKit", "TestSupport",
                crypto, hummingbird, hummingbirdTesting, logging, postgresNIO,
            ]
        ),
        testTargets(
            "TerminalBroker",
            dependencies: [
                "AnthropicLocal", "Contracts", "ControlAPI", "Ingest", "PlainWebSocket", "ServiceKit", "StreamTestSupport", "SwarmdeckTools",
                "TerminalBroker", "TestSupport", crypto, hummingbird, hummingbirdTesting, logging, nioCore, nioPosix, nioSSH, postgresNIO,
            ]
        ),
        testTargets(
            "PipelineRunner",
            dependencies: [
                "Anthropic", "AnthropicLocal", "Approvals", "Contracts", "ControlAPI", "Ingest", "PipelineRunner", "ServiceKit", "StreamFanout",
                "StreamTestSupport", "SwarmdeckTools", "TestSupport", asyncHTTPClient, hummingbird, hummingbirdTesting, logging, nioCore,
                nioHTTP1, postgresNIO,
            ]
        ),
        testTargets(
            "ServiceKit",
            dependencies: [
                "CNATS", "Contracts", "ServiceKit", "TestSupport", compressNIO, configuration, httpTypes, hummingbird, hummingbirdTesting, jwtKit,
                logging,
                nioCore, nioEmbedded, nioWebSocket, openAPIRuntime, postgresNIO, postgresPool, serviceLifecycle,
            ]
        ),
    ].flatMap { $0 } + [
        // Loads: tests that move megabytes or send thousands of requests, timing nothing.
        .testTarget(
            name: "LoadTests",
            dependencies: [
                "Contracts", "ControlAPI", "Ingest", "ServiceHarnesses", "ServiceKit", "StreamFanout", "StreamTestSupport", "TestSupport",
                hummingbird, hummingbirdTesting, nioCore,
            ],
            swiftSettings: swiftSettings
        ),
        // The services killed mid-work, as the real executable (swarmdeckd): nothing acknowledged lost.
        .testTarget(
            name: "CrashTests",
            dependencies: [
                "APNsLocal", "PipelineRunner", "ServiceHarnesses", "ServiceKit", "TestSupport", asyncHTTPClient, hummingbirdTesting, nioCore,
                nioHTTP1, postgresNIO,
            ],
            swiftSettings: swiftSettings
        ),
        // Every OpenAPI document fuzzed by schemathesis, one parameterized test over them all,
        // each service started by its harness.
        .testTarget(
            name: "FuzzTests",
            dependencies: ["Contracts", "ControlAPI", "ServiceHarnesses", "ServiceKit", "TestSupport", hummingbirdTesting],
            swiftSettings: swiftSettings
        ),
    ]

let package = Package(
    name: "swarmdeck",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "swarmdeck", targets: ["swarmdeck"]),
        .executable(name: "swarmdeck-bench", targets: ["SwarmdeckBench"]),
        .executable(name: "apns-local", targets: ["APNsLocalMain"]),
        .executable(name: "anthropic-local", targets: ["AnthropicLocalMain"]),
        .library(name: "Contracts", targets: ["Contracts"]),
        .library(name: "ServiceKit", targets: ["ServiceKit"]),
        .executable(name: "swarmdeckd", targets: ["swarmdeckd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.5.0"),
        .package(
            url: "https://github.com/apple/swift-configuration.git",
            from: "1.0.0",
            traits: [.defaults, "CommandLineArguments"]
        ),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.35.0"),
        .package(url: "https://github.com/apple/swift-nio-ssh.git", from: "0.15.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.29.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.28.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.10.0"),
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk.git", from: "0.12.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.24.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.1.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.25.0"),
    ],
    targets: services.map { serviceTarget($0.target, dependencies: $0.dependencies, exclude: $0.exclude) } + [
        // The registry of services (and swarmdeckd's config and deploy commands over it), and the one
        // executable that runs any of them.
        .target(
            name: "SwarmdeckServices",
            dependencies: ["Contracts", "ServiceKit", argumentParser] + services.map { .target(name: $0.target) },
            swiftSettings: swiftSettings
        ),
        .executableTarget(name: "swarmdeckd", dependencies: ["ServiceKit", "SwarmdeckServices"], swiftSettings: swiftSettings),
        .systemLibrary(
            name: "CNATS",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        // prctl for the agent connector (variadic in C, so not callable from Swift).
        .target(name: "CProcessControl"),
        .target(name: "CHeap"),
        .target(name: "Contracts", dependencies: [swiftProtobuf], exclude: ["Generated/README.md"], swiftSettings: swiftSettings),
        .target(name: "OTLP", dependencies: [compressNIO, nioCore, swiftProtobuf], exclude: ["Generated/README.md"], swiftSettings: swiftSettings),
        // The connector's telemetry relay: a loopback OTLP/HTTP endpoint for the command under it,
        // forwarding to ingest with the connector's key, every item stamped with its agent.
        .target(
            name: "TelemetryRelay",
            dependencies: ["OTLP", "ServiceKit", asyncHTTPClient, httpTypes, hummingbird, logging, nioCore, swiftProtobuf],
            swiftSettings: swiftSettings
        ),
        // The APNs provider client (HTTP/2 over TLS, token auth) the notifier sends with.
        .target(
            name: "APNs",
            dependencies: ["ServiceKit", asyncHTTPClient, crypto, logging, nioCore, nioHTTP1, nioSSL],
            swiftSettings: swiftSettings
        ),
        // A local APNs server that speaks the real protocol, for the tests and the local stack.
        .target(
            name: "APNsLocal",
            dependencies: ["ServiceKit", asn1, crypto, logging, nioCore, nioHPACK, nioHTTP2, nioPosix, nioSSL, x509],
            swiftSettings: swiftSettings
        ),
        // The Anthropic Messages API client (JSON and streaming, the official SDKs' retries) the
        // pipeline-runner calls its provider with.
        .target(
            name: "Anthropic",
            dependencies: [asyncHTTPClient, logging, nioCore, nioFoundationCompat, nioHTTP1],
            swiftSettings: swiftSettings
        ),
        // A local provider that speaks the real Messages API (deterministic answers, faults on
        // request), for the tests and the local stack.
        .target(
            name: "AnthropicLocal",
            dependencies: ["Contracts", hummingbird, logging, nioCore, nioFoundationCompat],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "AnthropicLocalMain",
            dependencies: ["AnthropicLocal", argumentParser, hummingbird, logging],
            swiftSettings: swiftSettings
        ),
        // pipeline-runner's contract, generated from openapi/pipeline-runner.yaml.
        .target(
            name: "PipelineRunnerContract",
            dependencies: [openAPIRuntime],
            exclude: ["Generated/README.md"],
            swiftSettings: generatedSwiftSettings
        ),
        .executableTarget(
            name: "APNsLocalMain",
            dependencies: ["APNsLocal", "ServiceKit", argumentParser, crypto, logging],
            swiftSettings: swiftSettings
        ),
        // control-api's contract: the types, server protocol and client generated from
        // openapi/control-api.yaml (scripts/generate-openapi), for the service and its clients.
        .target(name: "ControlAPIContract", dependencies: [openAPIRuntime], exclude: ["Generated/README.md"], swiftSettings: generatedSwiftSettings),
        // The agents' channel (control-api serves it; the connector calls it), generated from
        // openapi/agent-channel.yaml the same way.
        .target(
            name: "AgentChannelContract",
            dependencies: [openAPIRuntime],
            exclude: ["Generated/README.md"],
            swiftSettings: generatedSwiftSettings
        ),
        // approvals' contract, generated from openapi/approvals.yaml the same way.
        .target(name: "ApprovalsContract", dependencies: [openAPIRuntime], exclude: ["Generated/README.md"], swiftSettings: generatedSwiftSettings),
        // health-monitor's contract, generated from openapi/health-monitor.yaml the same way.
        .target(
            name: "HealthMonitorContract",
            dependencies: [openAPIRuntime],
            exclude: ["Generated/README.md"],
            swiftSettings: generatedSwiftSettings
        ),
        // the notifier's contract, generated from openapi/notifier.yaml the same way.
        .target(name: "NotifierContract", dependencies: [openAPIRuntime], exclude: ["Generated/README.md"], swiftSettings: generatedSwiftSettings),
        // terminal-broker's contract (its HTTP operations; the attach WebSocket is docs/terminal-protocol.md).
        .target(
            name: "TerminalBrokerContract",
            dependencies: [openAPIRuntime],
            exclude: ["Generated/README.md"],
            swiftSettings: generatedSwiftSettings
        ),
        // What the operator CLI and the benchmarks share: the ingest load generator, the control-api client.
        .target(
            name: "SwarmdeckTools",
            dependencies: [
                "AgentChannelContract", "ApprovalsContract", "ControlAPIContract", "OTLP", "ServiceKit", argumentParser, asyncHTTPClient,
                httpTypes, hummingbirdWSClient,
                nioCore, nioHTTP1, nioSSL, openAPIAsyncHTTPClient,
                openAPIRuntime, swiftProtobuf,
            ],
            swiftSettings: swiftSettings
        ),
        // Ingest's event log: the only code that knows its tables and frame layout.
        .target(
            name: "EventLog",
            dependencies: ["Contracts", "ServiceKit", crypto, logging, nioCore, postgresNIO, serviceLifecycle],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ServiceKit",
            dependencies: [
                "CHeap", "CNATS", "Contracts", compressNIO, configuration, crypto, httpTypes, hummingbird, hummingbirdCore, jwtKit, logging,
                metrics,
                openAPIRuntime,
                nioCore, nioHTTP1, nioHTTPTypes, nioHTTPTypesHTTP1, nioPosix,
                nioWebSocket, postgresNIO, postgresPool,
                prometheus, serviceLifecycle, swiftProtobuf, systemPackage,
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "SwarmdeckBench",
            dependencies: [
                "APNs", "APNsLocal", "ApprovalsContract", "CNATS", "Contracts", "ControlAPIContract", "EventLog", "OTLP", "PlainWebSocket",
                "ServiceKit", "SwarmdeckTools",
                "TelemetryRelay", "TerminalBroker", hummingbird, swiftProtobuf,
                argumentParser, asyncHTTPClient, crypto, hummingbirdWSClient, logging, nioCore, nioHTTP1, nioSSL, openAPIAsyncHTTPClient,
                openAPIRuntime, postgresNIO,
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "swarmdeck",
            dependencies: [
                // The operator's tools and the connector: no service's library (swarmdeckd runs those).
                "AgentChannelContract", "ApprovalsContract", "CProcessControl", "Contracts", "ControlAPIContract", "OTLP", "ServiceKit",
                "TelemetryRelay",
                "SwarmdeckTools", argumentParser, asyncHTTPClient, hummingbirdWSClient, mcp, nioCore, nioPosix,
                nioSSL,
                openAPIAsyncHTTPClient,
                openAPIRuntime,
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: ["Contracts", "ServiceKit", compressNIO, configuration, httpTypes, hummingbird, hummingbirdTesting, nioCore, postgresNIO],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        // The live tests' harnesses of the services (each starts its service with what it
        // needs: the test NATS and Postgres, an sshd, a local provider), for any test target.
        .target(
            name: "ServiceHarnesses",
            dependencies: [
                "AnthropicLocal", "APNs", "APNsLocal", "Approvals", "Contracts", "ControlAPI", "HealthMonitor", "Ingest", "Notifier",
                "PipelineRunner", "PlainWebSocket", "ServiceKit", "StreamFanout", "StreamTestSupport", "SwarmdeckTools", "TerminalBroker",
                "TestSupport", configuration, crypto, hummingbird, hummingbirdTesting, logging, nioConcurrencyHelpers, nioCore, postgresNIO,
            ],
            path: "Tests/ServiceHarnesses",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PlainWebSocket",
            dependencies: [crypto, nioCore, nioPosix, nioWebSocket],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "StreamTestSupport",
            dependencies: ["PlainWebSocket", "ServiceKit", nioCore],
            path: "Tests/StreamTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "ContractsUnitTests", dependencies: ["Contracts"], swiftSettings: swiftSettings),
        .testTarget(
            name: "APNsUnitTests",
            dependencies: ["APNs", "APNsLocal", asyncHTTPClient, crypto, logging, nioSSL],
            swiftSettings: swiftSettings
        ),
    ] + splitTestTargets
)
