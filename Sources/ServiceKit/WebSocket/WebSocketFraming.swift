public import NIOCore

/// A server's WebSocket frames as bytes (RFC 6455 §5.2: a server's frames are not masked), for
/// writers that put frames on the wire themselves: an event framed once is written as it is to
/// every connection that gets it.
public enum WebSocketFraming {
    /// The opcodes a server writes.
    public enum Opcode: UInt8, Sendable {
        case text = 0x1
        case binary = 0x2
        case ping = 0x9
    }

    /// The length of the header of a final, unmasked frame of `length` payload bytes.
    public static func headerLength(payload length: Int) -> Int {
        length < 126 ? 2 : length <= 0xFFFF ? 4 : 10
    }

    /// Writes the header of a final, unmasked frame of `length` payload bytes; `compressed` sets
    /// the first reserved bit (a `permessage-deflate` message, ``WebSocketDeflate``).
    @discardableResult
    public static func writeHeader(_ opcode: Opcode, payload length: Int, compressed: Bool = false, into buffer: inout ByteBuffer) -> Int {
        var written = buffer.writeInteger(0x80 | (compressed ? 0x40 : 0) | opcode.rawValue)
        if length < 126 {
            written += buffer.writeInteger(UInt8(length))
        } else if length <= 0xFFFF {
            written += buffer.writeInteger(UInt8(126))
            written += buffer.writeInteger(UInt16(length))
        } else {
            written += buffer.writeInteger(UInt8(127))
            written += buffer.writeInteger(UInt64(length))
        }
        return written
    }

    /// A whole text frame holding `payload`: its header, then its bytes.
    public static func text(_ payload: ByteBuffer) -> ByteBuffer {
        Self.frame(.text, payload)
    }

    /// A whole frame holding `payload`, compressed (``WebSocketDeflate``) or not.
    public static func frame(_ opcode: Opcode, _ payload: ByteBuffer, compressed: Bool = false) -> ByteBuffer {
        var frame = ByteBuffer()
        frame.reserveCapacity(Self.headerLength(payload: payload.readableBytes) + payload.readableBytes)
        Self.writeHeader(opcode, payload: payload.readableBytes, compressed: compressed, into: &frame)
        frame.writeImmutableBuffer(payload)
        return frame
    }
}
