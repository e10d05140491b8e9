import Foundation
import NIOConcurrencyHelpers

/// One attachment's recording, asciicast v2: the header, then every screen a viewer was sent
/// (after a `screen` marker), every output and every input, in the order they happened, up to
/// `maxBytes` (then a marker says the rest was not kept).
final class TerminalRecorder: Sendable {
    private struct State {
        var handle: FileHandle?
        var bytes: Int
    }

    private let state: NIOLockedValueBox<State>
    private let started = ContinuousClock.now
    private let maxBytes: Int

    /// Creates the file (and its folders) and writes the header.
    init(file: URL, header: AsciicastHeader, maxBytes: Int) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let first = AsciicastRecording.line(header: header)
        guard FileManager.default.createFile(atPath: file.path, contents: Data(first), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        self.state = NIOLockedValueBox(State(handle: handle, bytes: first.count))
        self.maxBytes = maxBytes
    }

    func record(_ event: AsciicastEvent) {
        let elapsed = ContinuousClock.now - self.started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let line = AsciicastRecording.line(elapsed: seconds, event: event)
        self.state.withLockedValue { state in
            guard let handle = state.handle else { return }
            if state.bytes + line.count > self.maxBytes {
                let stop = AsciicastRecording.line(elapsed: seconds, event: .marker("recording stopped: terminal.max-recording-bytes reached"))
                try? handle.write(contentsOf: stop)
                try? handle.close()
                state.handle = nil
                return
            }
            do {
                try handle.write(contentsOf: line)
                state.bytes += line.count
            } catch {
                try? handle.close()
                state.handle = nil
            }
        }
    }

    func close() {
        self.state.withLockedValue { state in
            try? state.handle?.close()
            state.handle = nil
        }
    }
}
