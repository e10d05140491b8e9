import CompressNIO
import NIOCore
import TestSupport
import Testing

@testable import ServiceKit

@Suite("permessage-deflate (RFC 7692): what is agreed, and messages compressed and inflated within their bounds")
struct WebSocketDeflateTests {
    @Test(
        "the first offer the server can take wins; a window below 15 bits, an unknown or repeated parameter declines that offer",
        arguments: [
            ("permessage-deflate", "permessage-deflate; server_no_context_takeover"),
            ("permessage-deflate; client_max_window_bits", "permessage-deflate; server_no_context_takeover"),
            ("x-webkit-deflate-frame, permessage-deflate; client_max_window_bits=10", "permessage-deflate; server_no_context_takeover"),
            (
                "permessage-deflate; client_no_context_takeover; server_no_context_takeover",
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
            ),
            ("permessage-deflate; server_max_window_bits=10, permessage-deflate", "permessage-deflate; server_no_context_takeover"),
            // An accepted server_max_window_bits is echoed (RFC 7692 §7.1.2.1).
            ("Permessage-Deflate; Server_Max_Window_Bits=\"15\"", "permessage-deflate; server_no_context_takeover; server_max_window_bits=15"),
            // Malformed parameters decline their offer and nothing else.
            ("permessage-deflate; ;", nil),
            ("permessage-deflate;=", nil),
            ("permessage-deflate; =15", nil),
            ("permessage-deflate;", nil),
            ("permessage-deflate; ;, permessage-deflate", "permessage-deflate; server_no_context_takeover"),
            (",,;=,", nil),
            ("permessage-deflate" + String(repeating: "; client_no_context_takeover", count: 9), nil),
            (String(repeating: "x, ", count: 2000) + "permessage-deflate", nil),
            ("permessage-deflate; server_max_window_bits=10", nil),
            ("permessage-deflate; client_max_window_bits=16", nil),
            ("permessage-deflate; client_max_window_bits=x", nil),
            ("permessage-deflate; server_no_context_takeover; server_no_context_takeover", nil),
            ("permessage-deflate; mystery", nil),
            ("permessage-deflate; server_no_context_takeover=1", nil),
            ("x-webkit-deflate-frame", nil),
            ("", nil),
        ] as [(String, String?)]
    )
    func negotiation(offer: String, response: String?) {
        #expect(WebSocketDeflate.negotiate(offer)?.response == response)
    }

    static let json = ByteBuffer(
        string: "[" + (0..<40).map { #"{"seq":\#($0),"type":"log","message":"the same words again and again"}"# }.joined(separator: ",") + "]"
    )

    static func inflater(noContextTakeover: Bool = false) throws -> WebSocketDeflate.Inflater {
        try WebSocketDeflate.Inflater(.init(response: "", clientNoContextTakeover: noContextTakeover))
    }

    @Test("a message compressed on its own inflates to itself; a short one, or one that would grow, goes as it is")
    func roundTrip() throws {
        let compressed = try #require(WebSocketDeflate.compress(Self.json))
        #expect(compressed.readableBytes < Self.json.readableBytes / 4)
        #expect(try Self.inflater().inflate(compressed, limit: 1 << 20) == .message(Self.json))
        #expect(WebSocketDeflate.compress(ByteBuffer(string: String(repeating: "a", count: WebSocketDeflate.minimumPayload - 1))) == nil)
        let noise = ByteBuffer(bytes: (0..<4096).map { _ in UInt8.random(in: 0...255) })
        #expect(WebSocketDeflate.compress(noise) == nil)
        // The frame: RSV1 set when compressed, not otherwise.
        #expect(WebSocketDeflate.frame(.text, Self.json).getInteger(at: 0, as: UInt8.self) == 0xC1)
        #expect(WebSocketDeflate.frame(.text, ByteBuffer(string: "short")).getInteger(at: 0, as: UInt8.self) == 0x81)
    }

    /// Messages as a client compresses them, one stream: with its context taken over from
    /// message to message unless `reset`.
    static func clientMessages(_ messages: [ByteBuffer], reset: Bool) throws -> [ByteBuffer] {
        let client = try ClientDeflate(noContextTakeover: reset)
        return try messages.map { try client.compress($0) }
    }

    @Test("a client's messages may use its window across messages: one inflater per connection follows it")
    func contextTakeover() throws {
        let messages = try Self.clientMessages([Self.json, Self.json], reset: false)
        // The second refers back to the first: far smaller, and unreadable alone.
        #expect(messages[1].readableBytes < messages[0].readableBytes / 2)
        let inflater = try Self.inflater()
        #expect(inflater.inflate(messages[0], limit: 1 << 20) == .message(Self.json))
        #expect(inflater.inflate(messages[1], limit: 1 << 20) == .message(Self.json))
        #expect(try Self.inflater().inflate(messages[1], limit: 1 << 20) != .message(Self.json))
        // With client_no_context_takeover agreed, each stands alone.
        let alone = try Self.clientMessages([Self.json, Self.json], reset: true)
        let resetting = try Self.inflater(noContextTakeover: true)
        #expect(resetting.inflate(alone[0], limit: 1 << 20) == .message(Self.json))
        #expect(resetting.inflate(alone[1], limit: 1 << 20) == .message(Self.json))
    }

    @Test("a client message that ends its DEFLATE stream (a final block) is read, and so is the next one")
    func finalBlock() throws {
        let compressor = try ZlibCompressor(algorithm: .deflate, configuration: .init(windowSize: 15))
        var input = Self.json
        var ended = ByteBuffer()
        ended.reserveCapacity(compressor.maxSize(from: input) + 16)
        try compressor.deflate(from: &input, to: &ended, flush: .finish)
        let inflater = try Self.inflater()
        #expect(inflater.inflate(ended, limit: 1 << 20) == .message(Self.json))
        let next = try #require(try Self.clientMessages([Self.json], reset: true).first)
        #expect(inflater.inflate(next, limit: 1 << 20) == .message(Self.json))
        // An empty final stored block whose LEN and NLEN are exactly the tail the sender cut
        // (`01 00 00 ff ff` sent as `01`): zlib ends the stream having read everything, and the
        // message after it must still be read, not taken for an empty one.
        #expect(inflater.inflate(ByteBuffer(bytes: [0x01]), limit: 1 << 20) == .message(ByteBuffer()))
        #expect(inflater.inflate(next, limit: 1 << 20) == .message(Self.json))
    }

    @Test("bounds: 64 MiB of zeros in a few KiB stops at the limit; what is not DEFLATE is invalid")
    func bounds() throws {
        let bomb = try #require(try Self.clientMessages([ByteBuffer(repeating: 0, count: 64 << 20)], reset: true).first)
        #expect(bomb.readableBytes < 128 << 10)
        #expect(try Self.inflater().inflate(bomb, limit: 1 << 20) == .tooLarge)
        let exact = try #require(try Self.clientMessages([ByteBuffer(repeating: 0, count: 4096)], reset: true).first)
        #expect(try Self.inflater().inflate(exact, limit: 4096) == .message(ByteBuffer(repeating: 0, count: 4096)))
        #expect(try Self.inflater().inflate(exact, limit: 4095) == .tooLarge)
        #expect(try Self.inflater().inflate(ByteBuffer(bytes: [0xFF, 0xFF, 0xFF, 0xFF, 0x00]), limit: 1 << 20) == .invalid)
    }

    @Test("the assembler hands a compressed message over whole, for inflating; its budget counts what came")
    func assembler() {
        var assembler = WebSocketMessageAssembler(maxBytes: 10)
        #expect(assembler.add(opcode: .text, data: ByteBuffer(string: "abc"), fin: false, compressed: true) == .partial)
        #expect(
            assembler.add(opcode: .continuation, data: ByteBuffer(string: "de"), fin: true) == .compressed(text: true, ByteBuffer(string: "abcde"))
        )
        #expect(assembler.add(opcode: .binary, data: ByteBuffer(string: "x"), fin: true) == .message(.binary(ByteBuffer(string: "x"))))
        #expect(assembler.add(opcode: .text, data: ByteBuffer(string: "0123456789a"), fin: true, compressed: true) == .tooLarge)
    }
}
