import ParleyCore
import ParleyNodeCore
import XCTest

/// Which outgoing files get a thumbnail, the decompression-bomb bound, the judging of the
/// child's output, and the magic-number sniffing `files.thumbnail` relies on.
final class ThumbnailPolicyTests: XCTestCase {
    func testOnlyReadablePictureTypesUnderTheSizeLimitAreThumbnailed() {
        for type in ["image/jpeg", "image/png", "image/gif", "image/webp"] {
            XCTAssertTrue(ThumbnailPolicy.wants(mediaType: type, size: 1_000), type)
        }
        // SVG (a document format, librsvg), other types, and no type at all: never.
        for type in ["image/svg+xml", "application/pdf", "", "image/tiff", "IMAGE/PNG", "image/png "] {
            XCTAssertFalse(ThumbnailPolicy.wants(mediaType: type, size: 1_000), type)
        }
        XCTAssertFalse(ThumbnailPolicy.wants(mediaType: "image/png", size: 0))
        XCTAssertTrue(ThumbnailPolicy.wants(mediaType: "image/png", size: ThumbnailLimits.maxSourceBytes))
        XCTAssertFalse(ThumbnailPolicy.wants(mediaType: "image/png", size: ThumbnailLimits.maxSourceBytes + 1))
        XCTAssertFalse(ThumbnailPolicy.wants(mediaType: "image/jpeg", size: .max))
    }

    func testTheHeaderLineGivesTheDeclaredDimensions() throws {
        let d = try XCTUnwrap(
            ThumbnailPolicy.dimensions(fromHeaderLine: "/input: 30000x30000 uchar, 1 band, b-w, pngload\n"))
        XCTAssertEqual(d.width, 30_000)
        XCTAssertEqual(d.height, 30_000)
        // A real path with ": " and a WxH-looking word in it: only the part after the last ": " counts.
        let e = try XCTUnwrap(
            ThumbnailPolicy.dimensions(fromHeaderLine: "/home/u/a: 1x1 b: 640x480 uchar, 3 bands, srgb, jpegload"))
        XCTAssertEqual(e.width, 640)
        XCTAssertEqual(e.height, 480)
    }

    func testAHeaderLineWithoutDimensionsIsRefused() {
        for line in [
            "", "\n", "garbage", "/input: uchar, 3 bands", "/input: x480 uchar", "/input: 640x uchar",
            "/input: 640x480x3", "/input: -640x480", "/input: ６４０x480",
            "/input: 99999999999999999999999x1 uchar", String(repeating: "a", count: ThumbnailLimits.maxHeaderBytes + 1)
        ] {
            let d = ThumbnailPolicy.dimensions(fromHeaderLine: line)
            XCTAssertTrue(d == nil || !ThumbnailPolicy.mayDecode(width: d!.width, height: d!.height), line)
        }
    }

    func testADecompressionBombIsNotDecoded() {
        XCTAssertTrue(ThumbnailPolicy.mayDecode(width: 12_000, height: 9_000))  // 108 MP camera
        XCTAssertTrue(ThumbnailPolicy.mayDecode(width: ThumbnailLimits.maxSourcePixels, height: 1))
        XCTAssertFalse(ThumbnailPolicy.mayDecode(width: ThumbnailLimits.maxSourcePixels + 1, height: 1))
        XCTAssertFalse(ThumbnailPolicy.mayDecode(width: 30_000, height: 30_000))
        XCTAssertFalse(ThumbnailPolicy.mayDecode(width: 0, height: 100))
        XCTAssertFalse(ThumbnailPolicy.mayDecode(width: 100, height: -1))
        XCTAssertFalse(ThumbnailPolicy.mayDecode(width: .max, height: .max))  // overflow, not a crash
    }

    func testOnlyAJPEGWithinTheOfferBoundIsUsed() {
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 1, count: 100)
        XCTAssertEqual(ThumbnailPolicy.judge(output: jpeg), .use)
        var big = [UInt8](repeating: 0, count: FileLimits.maxThumbnailBytes)
        big.replaceSubrange(0..<3, with: [0xFF, 0xD8, 0xFF])
        XCTAssertEqual(ThumbnailPolicy.judge(output: big), .use)
        XCTAssertEqual(ThumbnailPolicy.judge(output: big + [0]), .tooLarge)
        XCTAssertEqual(ThumbnailPolicy.judge(output: []), .notJPEG)
        XCTAssertEqual(ThumbnailPolicy.judge(output: [0xFF, 0xD8]), .notJPEG)
        // A PNG is a picture, but not what the child was asked for: refused.
        XCTAssertEqual(ThumbnailPolicy.judge(output: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]), .notJPEG)
        XCTAssertEqual(ThumbnailPolicy.judge(output: Array("vips: error".utf8)), .notJPEG)
    }

    func testStoredThumbnailsAreTypedByMagicNumbersOnly() {
        XCTAssertEqual(ThumbnailImageType.sniff([0xFF, 0xD8, 0xFF]), .jpeg)
        XCTAssertEqual(ThumbnailImageType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), .png)
        XCTAssertEqual(ThumbnailImageType.jpeg.mediaType, "image/jpeg")
        XCTAssertEqual(ThumbnailImageType.png.mediaType, "image/png")
        for bytes: [UInt8] in [
            [], [0xFF], [0xFF, 0xD8], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A], Array("GIF89a".utf8),
            Array("<svg xmlns=".utf8), Array("RIFF\0\0\0\0WEBP".utf8), [0x00, 0xFF, 0xD8, 0xFF]
        ] {
            XCTAssertNil(ThumbnailImageType.sniff(bytes), "\(bytes)")
        }
    }

    func testTheLimitsAreConsistent() {
        XCTAssertLessThan(Double(ThumbnailLimits.cpuSeconds), Double(ThumbnailLimits.timeout.components.seconds))
        XCTAssertEqual(ThumbnailLimits.maxOutputBytes, FileLimits.maxThumbnailBytes + 1)
        XCTAssertEqual(ThumbnailLimits.qualities.count, 2)
        XCTAssertGreaterThan(ThumbnailLimits.qualities[0], ThumbnailLimits.qualities[1])
        XCTAssertGreaterThanOrEqual(ThumbnailLimits.concurrent, 1)
        XCTAssertLessThanOrEqual(ThumbnailLimits.concurrent, 2)
    }
}
