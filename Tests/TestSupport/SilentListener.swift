import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP listener that accepts connections and never says a word: what a client meets
/// at a server that hangs, or at an address where the connect only fails at its timeout.
/// ``listen()`` starts it (a port can be named before anything listens on it); ``close()`` resets
/// every connection it holds and stops listening.
public final class SilentListener: @unchecked Sendable {
    public let port: Int
    private let lock = NSLock()
    private var listener: Int32 = -1
    private var accepted: [Int32] = []

    public init() throws {
        self.port = try freeLoopbackPort()
    }

    public var url: String { "nats://127.0.0.1:\(self.port)" }

    /// Connections accepted so far.
    public var acceptedCount: Int { self.lock.withLock { self.accepted.count } }

    /// Starts listening and accepting, on a thread of its own.
    public func listen() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw POSIXError(.EMFILE) }
        var reuse: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(self.port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(socketFD, 16) == 0 else {
            Glibc.close(socketFD)
            throw POSIXError(.EADDRINUSE)
        }
        self.lock.withLock { self.listener = socketFD }
        Thread.detachNewThread {
            while true {
                let connection = accept(socketFD, nil, nil)
                guard connection >= 0 else { return }
                let kept = self.lock.withLock { () -> Bool in
                    guard self.listener == socketFD else { return false }
                    self.accepted.append(connection)
                    return true
                }
                if !kept {
                    Glibc.close(connection)
                    return
                }
            }
        }
    }

    /// Resets every accepted connection (the client reads the end at once) and stops listening.
    public func close() {
        let (listener, accepted) = self.lock.withLock { () -> (Int32, [Int32]) in
            defer {
                self.listener = -1
                self.accepted = []
            }
            return (self.listener, self.accepted)
        }
        for connection in accepted {
            var linger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            Glibc.close(connection)
        }
        if listener >= 0 {
            shutdown(listener, Int32(SHUT_RDWR))
            Glibc.close(listener)
        }
    }

    deinit {
        self.close()
    }
}
