import CompressNIO
import Foundation
public import NIOCore
import NIOPosix

/// WebSocket compression, `permessage-deflate` (RFC 7692), when the client offers it.
///
/// The server always takes `server_no_context_takeover`: each message it sends is compressed
/// on its own, so a live event compressed once serves every connection that negotiated it
/// (as the uncompressed frame does), and a connection keeps no compression window. What the
/// client sends may use its context across messages (unless it offered
/// `client_no_context_takeover`): each connection that negotiated it keeps an inflater.
public enum WebSocketDeflate {
    /// What the server agreed to for one connection.
    public struct Agreement: Sendable, Equatable {
        /// The `Sec-WebSocket-Extensions` value of the 101 answer.
        public var response: String
        /// The client compresses each message on its own (it offered `client_no_context_takeover`).
        public var clientNoContextTakeover: Bool
    }

    /// The first `permessage-deflate` offer in `header` (the request's
    /// `Sec-WebSocket-Extensions` values, joined by commas) the server can take, or nil. An offer
    /// limiting the server's window below 15 bits is declined (compressed frames are shared by
    /// every connection, all made with the full window), as is one with an unknown, repeated or
    /// malformed parameter (RFC 7692 §7.1: the offer is then not taken, and the next one may be).
    /// Bounded: a header over ``maxOfferBytes``, or past ``maxOffers`` offers, is read no further.
    public static func negotiate(_ header: String?) -> Agreement? {
        guard let header, header.utf8.count <= Self.maxOfferBytes else { return nil }
        for offer in header.split(separator: ",", omittingEmptySubsequences: true).prefix(Self.maxOffers) {
            let parts = offer.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.first?.lowercased() == "permessage-deflate", parts.count <= Self.maxParameters + 1 else { continue }
            var seen: Set<String> = []
            var clientNoContextTakeover = false
            var serverWindowOffered = false
            var acceptable = true
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                // An empty parameter (`permessage-deflate; ;`) or name (`;=15`) declines the offer.
                guard let first = pair.first, !first.isEmpty else {
                    acceptable = false
                    break
                }
                let name = first.lowercased()
                let value = pair.count == 2 ? pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
                guard seen.insert(name).inserted else {
                    acceptable = false
                    break
                }
                switch name {
                case "server_no_context_takeover":
                    acceptable = value == nil
                case "client_no_context_takeover":
                    acceptable = value == nil
                    clientNoContextTakeover = true
                case "server_max_window_bits":
                    acceptable = value == "15"
                    serverWindowOffered = true
                case "client_max_window_bits":
                    // The client's window is at most this (or 15, with no value): an inflater with
                    // a window of 15 reads any of them.
                    acceptable = value.map { Int($0).map { (8...15).contains($0) } ?? false } ?? true
                default:
                    acceptable = false
                }
                if !acceptable { break }
            }
            guard acceptable else { continue }
            // A parameter the offer named that the server accepts is echoed (RFC 7692 §7.1.2.1:
            // server_max_window_bits MUST be, when accepted).
            return Agreement(
                response: "permessage-deflate; server_no_context_takeover" + (clientNoContextTakeover ? "; client_no_context_takeover" : "")
                    + (serverWindowOffered ? "; server_max_window_bits=15" : ""),
                clientNoContextTakeover: clientNoContextTakeover
            )
        }
        return nil
    }

    /// The longest `Sec-WebSocket-Extensions` read, the offers and the parameters of one read.
    static let maxOfferBytes = 4096
    static let maxOffers = 16
    static let maxParameters = 8

    /// Payloads shorter than this are sent as they are (RFC 7692 §6: a message may go
    /// uncompressed): deflate's block overhead would eat what it saves.
    public static let minimumPayload = 128

    /// `payload` compressed on its own (raw DEFLATE with the full window, ended by a sync flush
    /// whose `00 00 ff ff` tail is cut, RFC 7692 §7.2.1), or nil when it is short or would not
    /// shrink. Each thread has a compressor of its own (reset for each message), so writers on
    /// different event loops never wait for each other.
    public static func compress(_ payload: ByteBuffer) -> ByteBuffer? {
        guard payload.readableBytes >= Self.minimumPayload, let compressor = Self.threadCompressor() else { return nil }
        do {
            try compressor.zlib.reset()
            var input = payload
            var output = ByteBuffer()
            output.reserveCapacity(compressor.zlib.maxSize(from: input))
            try compressor.zlib.deflate(from: &input, to: &output, flush: .sync)
            guard input.readableBytes == 0, output.readableBytes >= 4,
                output.getBytes(at: output.writerIndex - 4, length: 4) == [0x00, 0x00, 0xFF, 0xFF]
            else { return nil }
            output.moveWriterIndex(to: output.writerIndex - 4)
            return output.readableBytes < payload.readableBytes ? output : nil
        } catch {
            return nil
        }
    }

    /// A whole frame of `payload` for a connection that negotiated compression: compressed
    /// (the first reserved bit set) when that makes it smaller, else as it is.
    public static func frame(_ opcode: WebSocketFraming.Opcode, _ payload: ByteBuffer) -> ByteBuffer {
        guard let compressed = Self.compress(payload) else { return WebSocketFraming.frame(opcode, payload) }
        return WebSocketFraming.frame(opcode, compressed, compressed: true)
    }

    /// A thread's compressor: used only by the thread that made it, and only between two of
    /// its instructions (compressing never suspends), hence `@unchecked Sendable`.
    private final class ThreadCompressor: @unchecked Sendable {
        let zlib: ZlibCompressor

        init() throws {
            self.zlib = try ZlibCompressor(algorithm: .deflate, configuration: .init(windowSize: 15, compressionLevel: 6, memoryLevel: 8))
        }
    }

    private static let compressors = ThreadSpecificVariable<ThreadCompressor>()

    private static func threadCompressor() -> ThreadCompressor? {
        if let compressor = Self.compressors.currentValue { return compressor }
        guard let compressor = try? ThreadCompressor() else { return nil }
        Self.compressors.currentValue = compressor
        return compressor
    }

    /// Inflates one connection's compressed messages, keeping the client's window across them
    /// unless it agreed not to use it. Used on the connection's event loop only.
    final class Inflater {
        private let decompressor: ZlibDecompressor
        private let noContextTakeover: Bool

        init(_ agreement: Agreement) throws {
            self.decompressor = try ZlibDecompressor(algorithm: .deflate, windowSize: 15)
            self.noContextTakeover = agreement.clientNoContextTakeover
        }

        /// The message a compressed payload holds, or nil when it is not valid DEFLATE or would
        /// inflate past `limit` bytes (reading stops there: a small payload that inflates to
        /// gigabytes costs `limit` bytes at most).
        func inflate(_ payload: ByteBuffer, limit: Int) -> Outcome {
            var input = payload
            input.writeBytes([0x00, 0x00, 0xFF, 0xFF])
            var output = ByteBuffer()
            output.reserveCapacity(min(limit + 1, max(256, payload.readableBytes * 4)))
            defer {
                // A message that ended its DEFLATE stream (a final block, RFC 7692 §7.2.3.5)
                // leaves the appended tail unread: the next one starts a new stream.
                if self.noContextTakeover || input.readableBytes > 0 { try? self.decompressor.reset() }
            }
            var restarted = false
            while true {
                let unread = input.readableBytes
                do {
                    try self.decompressor.inflate(from: &input, to: &output)
                    // Nothing read: the stream had ended with the last message's final block
                    // exactly at its appended tail. This message starts a new stream.
                    if input.readableBytes == unread, !restarted {
                        restarted = true
                        try? self.decompressor.reset()
                        continue
                    }
                    return output.readableBytes <= limit ? .message(output) : .tooLarge
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    // The output is full: more room, up to one byte past the limit.
                    guard output.readableBytes <= limit else { return .tooLarge }
                    output.reserveCapacity(min(limit + 1, output.capacity * 2))
                    if output.writableBytes == 0 { return .tooLarge }
                } catch let error as CompressNIOError where error == .inputBufferOverflow {
                    // Everything was read (the output filled exactly at the end).
                    return output.readableBytes <= limit ? .message(output) : .tooLarge
                } catch {
                    return .invalid
                }
            }
        }

        enum Outcome: Equatable {
            case message(ByteBuffer)
            case tooLarge
            case invalid
        }
    }
}
