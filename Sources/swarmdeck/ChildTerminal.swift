import CProcessControl
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The pseudo-terminal a ``ChildProcess`` runs on when the connector gives its command a
/// terminal: the master side the connector reads and types into, the slave side's path the
/// command opens as its controlling terminal, and the connector's own terminal (a tmux pane)
/// put in raw mode while keystrokes are passed through, restored after.
final class ChildTerminal: Sendable {
    let master: Int32
    let slavePath: String
    private let saved = Mutex<termios?>(nil)
    /// Set once the command's side is done with: its window size is no longer passed on.
    private let ended = Mutex(false)
    /// The SIGWINCH source, kept for as long as the terminal lives.
    private let resizes = Mutex<SignalSource?>(nil)

    /// Whether the connector's own terminal is in raw mode (its messages then end lines with
    /// CR LF themselves).
    static let isRaw = Atomic(false)

    private init(master: Int32, slavePath: String) {
        self.master = master
        self.slavePath = slavePath
    }

    /// A new pseudo-terminal with the window size of the connector's terminal (120×40 when
    /// it has none).
    static func open() throws -> ChildTerminal {
        var name = [CChar](repeating: 0, count: 256)
        let master = swarmdeck_open_pty(&name, name.count)
        guard master >= 0 else { throw ChildProcessError("a pseudo-terminal for the command: \(String(cString: strerror(errno)))") }
        if isatty(0) != 1 || swarmdeck_copy_window_size(0, master) != 0 {
            _ = swarmdeck_set_window_size(master, 120, 40)
        }
        return ChildTerminal(master: master, slavePath: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// When the connector's standard input is its terminal and it runs in the foreground there:
    /// puts it in raw mode (keys reach the command as typed, Ctrl-C included; what the command
    /// writes reaches the terminal unchanged), passes what is typed to `input`, and follows the
    /// window size.
    func forwardKeystrokes(to input: InputQueue) {
        // A connector in the background (`… &` in a shell) would be stopped by touching it.
        guard isatty(0) == 1, tcgetpgrp(0) == getpgrp() else { return }
        var current = termios()
        guard tcgetattr(0, &current) == 0 else { return }
        self.saved.withLock { $0 = current }
        var raw = current
        cfmakeraw(&raw)
        guard tcsetattr(0, TCSANOW, &raw) == 0 else { return }
        Self.isRaw.store(true, ordering: .relaxed)
        signal(SIGWINCH, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        source.setEventHandler { [self] in
            self.ended.withLock { ended in
                if !ended { _ = swarmdeck_copy_window_size(0, self.master) }
            }
        }
        source.resume()
        self.resizes.withLock { $0 = SignalSource(source) }
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                // A command that does not read (paused) loses keys past the queue's limit.
                try? input.append(Array(buffer[0..<count]))
            }
        }
    }

    /// The terminal's foreground process group (a shell's job), while it is open.
    func foregroundGroup() -> pid_t? {
        self.ended.withLock { ended in
            guard !ended else { return nil }
            let group = tcgetpgrp(self.master)
            return group > 0 ? group : nil
        }
    }

    /// Gives the connector's terminal back its settings.
    func restore() {
        self.resizes.withLock { box in
            box?.source.cancel()
            box = nil
        }
        if var saved = self.saved.withLock({ $0 }) {
            tcsetattr(0, TCSANOW, &saved)
            Self.isRaw.store(false, ordering: .relaxed)
        }
    }

    func close() {
        self.ended.withLock { ended in
            guard !ended else { return }
            ended = true
            Glibc.close(self.master)
        }
    }

    /// Copies what the command wrote to the connector's standard output, as it came.
    static func writeToStandardOutput(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = write(1, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// A dispatch source, held where only `Sendable` values go (it is thread-safe).
    final class SignalSource: @unchecked Sendable {
        let source: any DispatchSourceSignal
        init(_ source: any DispatchSourceSignal) { self.source = source }
    }
}
