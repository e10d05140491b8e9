import Contracts
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import ServiceKit
import ServiceLifecycle

/// The recordings on this replica's disk: `DIR/TENANT/HOST/NAME/STARTED-RANDOM.cast`, each path
/// part derived from the tenant's token and a session of that tenant (so no caller can name
/// another tenant's file), kept `terminal.recordings-retention-days`.
struct TerminalRecordings: Sendable {
    let directory: URL
    let maxBytes: Int
    /// The most one tenant's recordings on this replica may take; a new recording first
    /// removes the tenant's oldest until it fits at its largest.
    let maxTenantBytes: Int
    let retention: Duration
    /// The recordings being written, by tenant: each counted at its largest, never removed.
    private let writing = NIOLockedValueBox<[String: Set<URL>]>([:])

    init(directory: URL, maxBytes: Int, maxTenantBytes: Int, retention: Duration) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.maxTenantBytes = maxTenantBytes
        self.retention = retention
    }

    /// A recording of a session, as listed.
    struct Info: Codable, Sendable, Equatable {
        var recordingId: String
        var startedAt: Date
        var bytes: Int
    }

    private static func safe(_ text: String) -> String {
        Data(text.utf8).base64URLEncodedString()
    }

    private func folder(tenant: String, session: TerminalSessionID) -> URL {
        self.directory.appendingPathComponent(Self.safe(tenant)).appendingPathComponent(session.hostID)
            .appendingPathComponent(Self.safe(session.name))
    }

    /// A new recording's file.
    func newFile(tenant: String, session: TerminalSessionID) -> URL {
        let id = "\(Int64(Date().timeIntervalSince1970 * 1000))-\(randomHex(bytes: 4))"
        return self.folder(tenant: tenant, session: session).appendingPathComponent(id + ".cast")
    }

    /// Whether `id` has the shape of a recording id (`MILLIS-HEX8`).
    static func isRecordingID(_ id: String) -> Bool {
        let parts = id.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 2 && (1...15).contains(parts[0].count) && parts[0].allSatisfy(\.isASCII) && parts[0].allSatisfy(\.isNumber)
            && parts[1].count == 8 && parts[1].allSatisfy { $0.isHexDigit && ($0.isNumber || $0.isLowercase) }
    }

    /// The session's recordings, newest first.
    func list(tenant: String, session: TerminalSessionID) -> [Info] {
        let folder = self.folder(tenant: tenant, session: session)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.compactMap { name -> Info? in
            guard name.hasSuffix(".cast") else { return nil }
            let id = String(name.dropLast(5))
            guard Self.isRecordingID(id), let millis = Double(id.split(separator: "-")[0]) else { return nil }
            let size = (try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size] as? Int) ?? 0
            return Info(recordingId: id, startedAt: Date(timeIntervalSince1970: millis / 1000), bytes: size)
        }.sorted { $0.recordingId > $1.recordingId }
    }

    /// One recording, to be read in chunks (a recording may be `terminal.max-recording-bytes`
    /// large: a download never holds it whole).
    func open(tenant: String, session: TerminalSessionID, id: String) throws(APIError) -> RecordingFile {
        guard Self.isRecordingID(id) else { throw APIError(.notFound, "no such recording") }
        let file = self.folder(tenant: tenant, session: session).appendingPathComponent(id + ".cast")
        guard let handle = FileHandle(forReadingAtPath: file.path) else { throw APIError(.notFound, "no such recording") }
        let size = (try? handle.seekToEnd()).map(Int.init) ?? 0
        try? handle.seek(toOffset: 0)
        return RecordingFile(handle: handle, size: size)
    }

    /// A new recording's file for the tenant, reserved at its largest (`maxBytes`): first the
    /// tenant's oldest finished recordings are removed until it fits in `maxTenantBytes`, each
    /// recording still being written counted at its largest and never removed. Pair with
    /// ``finished(_:tenant:)``.
    /// - Throws: when the tenant's recordings being written take the quota already.
    func reserve(tenant: String, session: TerminalSessionID) throws -> URL {
        try self.writing.withLockedValue { writing in
            let open = writing[tenant] ?? []
            let root = self.directory.appendingPathComponent(Self.safe(tenant))
            var finished: [(url: URL, id: String, bytes: Int)] = []
            if let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.fileSizeKey]) {
                for case let file as URL in files where file.pathExtension == "cast" && !open.contains(file.standardizedFileURL) {
                    let bytes = (try? file.resourceValues(forKeys: [.fileSizeKey]))?.fileSize ?? 0
                    finished.append((file, file.deletingPathExtension().lastPathComponent, bytes))
                }
            }
            var total = finished.reduce(0) { $0 + $1.bytes } + open.count * self.maxBytes
            // Oldest first: ids start with their start time in milliseconds.
            for recording in finished.sorted(by: { $0.id.count != $1.id.count ? $0.id.count < $1.id.count : $0.id < $1.id }) {
                guard total + self.maxBytes > self.maxTenantBytes else { break }
                if (try? FileManager.default.removeItem(at: recording.url)) != nil { total -= recording.bytes }
            }
            guard total + self.maxBytes <= self.maxTenantBytes else {
                throw APIError(
                    .rateLimited,
                    "this tenant's recordings being written take terminal.max-recording-bytes-per-tenant already"
                )
            }
            let file = self.newFile(tenant: tenant, session: session).standardizedFileURL
            writing[tenant, default: []].insert(file)
            return file
        }
    }

    /// A reserved recording is no longer written.
    func finished(_ file: URL, tenant: String) {
        self.writing.withLockedValue { writing in
            writing[tenant]?.remove(file.standardizedFileURL)
            if writing[tenant]?.isEmpty == true { writing[tenant] = nil }
        }
    }

    /// Deletes recordings older than the retention.
    func sweep(now: Date = Date()) -> Int {
        let cutoff = now.addingTimeInterval(-Double(self.retention.components.seconds))
        var removed = 0
        guard let files = FileManager.default.enumerator(at: self.directory, includingPropertiesForKeys: [.contentModificationDateKey]) else {
            return 0
        }
        for case let file as URL in files where file.pathExtension == "cast" {
            let modified = (try? file.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate ?? now
            if modified < cutoff, (try? FileManager.default.removeItem(at: file)) != nil { removed += 1 }
        }
        return removed
    }
}

/// Sweeps expired recordings hourly.
struct RecordingSweep: Service {
    let recordings: TerminalRecordings
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            let removed = self.recordings.sweep()
            if removed > 0 { self.logger.info("recordings past their retention removed", metadata: ["count": "\(removed)"]) }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(3600)) }
            if Task.isCancelled { return }
        }
    }
}

/// An open recording, read 64 KiB at a time as its consumer asks (the download's back-pressure).
/// It reads at most the size it had when opened: a recording still being written ends there.
struct RecordingFile: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    let handle: FileHandle
    let size: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle
        var left: Int

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard self.left > 0 else {
                try? self.handle.close()
                return nil
            }
            let chunk = try self.handle.read(upToCount: Swift.min(self.left, 64 << 10)) ?? Data()
            guard !chunk.isEmpty else {
                try? self.handle.close()
                return nil
            }
            self.left -= chunk.count
            return ArraySlice(chunk)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(handle: self.handle, left: self.size)
    }
}
