import CompressNIO
import Foundation
public import NIOCore
import Synchronization

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
    public static func negotiate(_ header: String?) -> Agreement? {
        guard let header else { return nil }
        for offer in header.split(separator: ",") {
            let parts = offer.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.first?.lowercased() == "permessage-deflate" else { continue }
            var seen: Set<String> = []
            var clientNoContextTakeover = false
            var acceptable = true
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                let name = pair[0].lowercased()
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
            return Agreement(
                response: "permessage-deflate; server_no_context_takeover" + (clientNoContextTakeover ? "; client_no_context_takeover" : ""),
                clientNoContextTakeover: clientNoContextTakeover
            )
        }
        return nil
    }

    /// Payloads shorter than this are sent as they are (RFC 7692 §6: a message may go
    /// uncompressed): deflate's block overhead would eat what it saves.
    public static let minimumPayload = 128

    /// `payload` compressed on its own (raw DEFLATE with the full window, ended by a sync flush
    /// whose `00 00 ff ff` tail is cut, RFC 7692 §7.2.1), or nil when it is short or would not
    /// shrink. Thread-safe: one compressor, reset for each message, behind a lock.
    public static func compress(_ payload: ByteBuffer) -> ByteBuffer? {
        guard payload.readableBytes >= Self.minimumPayload else { return nil }
        return Self.compressor.withLock { compressor -> ByteBuffer? in
            guard let compressor else { return nil }
            do {
                try compressor.reset()
                var input = payload
                var output = ByteBuffer()
                output.reserveCapacity(compressor.maxSize(from: input))
                try compressor.deflate(from: &input, to: &output, flush: .sync)
                guard input.readableBytes == 0, output.readableBytes >= 4 else { return nil }
                output.moveWriterIndex(to: output.writerIndex - 4)
                return output.readableBytes < payload.readableBytes ? output : nil
            } catch {
                return nil
            }
        }
    }

    /// A whole frame of `payload` for a connection that negotiated compression: compressed
    /// (the first reserved bit set) when that makes it smaller, else as it is.
    public static func frame(_ opcode: WebSocketFraming.Opcode, _ payload: ByteBuffer) -> ByteBuffer {
        guard let compressed = Self.compress(payload) else { return WebSocketFraming.frame(opcode, payload) }
        return WebSocketFraming.frame(opcode, compressed, compressed: true)
    }

    private static let compressor = Mutex<ZlibCompressor?>(
        try? ZlibCompressor(algorithm: .deflate, configuration: .init(windowSize: 15, compressionLevel: 6, memoryLevel: 8))
    )

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
            defer { if self.noContextTakeover { try? self.decompressor.reset() } }
            while true {
                do {
                    try self.decompressor.inflate(from: &input, to: &output)
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
