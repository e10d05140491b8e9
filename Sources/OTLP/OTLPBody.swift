import CompressNIO
import Foundation
public import NIOCore

/// An OTLP/HTTP body as its `Content-Encoding` says: as sent, or gunzipped within a limit.
/// Shared by ingest's receivers and the connector's telemetry relay.
public enum OTLPBody {
    /// Why a body could not be read.
    public enum Failure: Error, Equatable, Sendable {
        /// It inflates past the limit.
        case tooLarge
        /// Not valid gzip, or cut off (the trailer's length does not match).
        case malformed(String)
        /// An encoding other than gzip or none.
        case unsupportedEncoding(String)
    }

    /// `body` decoded as `contentEncoding` (nil, empty, `identity`, `gzip` or `x-gzip`), at most
    /// `limit` bytes once inflated.
    public static func decode(_ body: ByteBuffer, contentEncoding: String?, limit: Int) throws(Failure) -> ByteBuffer {
        switch contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased() {
        case nil, "", "identity":
            return body
        case "gzip", "x-gzip":
            var compressed = body
            let inflated: ByteBuffer
            do {
                inflated = try compressed.decompress(with: .gzip(), maxSize: limit)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                throw .tooLarge
            } catch {
                throw .malformed("the body is not valid gzip (\(error))")
            }
            // zlib stops quietly at the end of its input: a cut-off body would pass as a
            // shorter one. The gzip trailer's ISIZE (length mod 2^32) tells.
            guard body.readableBytes >= 18,
                let size = body.getInteger(at: body.readerIndex + body.readableBytes - 4, endianness: .little, as: UInt32.self),
                size == UInt32(truncatingIfNeeded: inflated.readableBytes)
            else {
                throw .malformed("the gzip body is truncated (or has several members, which is not supported)")
            }
            return inflated
        case let other?:
            throw .unsupportedEncoding("Content-Encoding \(other) is not supported; send gzip or none")
        }
    }
}
