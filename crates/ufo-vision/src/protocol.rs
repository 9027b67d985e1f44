//! The pipe protocol between ufo and its detection worker `ufo-sight` (docs/sight.md, "The
//! worker"). One request, one reply, in turn, over the worker's stdin and stdout.
//!
//! A request is a frame holding a small JSON [`RequestHeader`] followed by the region's raw
//! pixels (`width × height × bytes per pixel`, no row padding); a reply is a frame holding a
//! JSON [`Reply`]. A frame is a 4-byte little-endian length, then that many bytes. Every
//! length is checked against its bound before anything is allocated.

use serde::{Deserialize, Serialize};
use ufo_core::vision::{
    DetectError, DetectRequest, DetectedBox, PixelFormat, RegionImage, MAX_REGION_SIDE,
};

/// The protocol's version: a worker refuses a request of another version, so a stale worker
/// next to a newer ufo says so instead of misreading.
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest request header accepted, in bytes (a header is about 120 bytes).
pub const MAX_HEADER: u32 = 4096;

/// The longest reply accepted, in bytes: thousands of boxes fit, a runaway worker does not.
pub const MAX_REPLY: u32 = 16 * 1024 * 1024;

/// What precedes a region's pixels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestHeader {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub version: u32,
    /// What to read.
    pub request: DetectRequest,
    /// The region's top-left pixel on the screen.
    pub origin: (i32, i32),
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The layout of the pixels that follow.
    pub format: PixelFormat,
}

impl RequestHeader {
    /// The header describing `region`.
    pub fn of(region: &RegionImage, request: DetectRequest) -> Self {
        Self {
            version: PROTOCOL_VERSION,
            request,
            origin: region.origin(),
            width: region.width(),
            height: region.height(),
            format: region.format(),
        }
    }

    /// How many pixel bytes follow this header; an error (before any allocation) when the
    /// version differs or the size is out of bounds.
    pub fn pixel_len(&self) -> Result<usize, DetectError> {
        if self.version != PROTOCOL_VERSION {
            return Err(DetectError::BadImage(format!(
                "the request speaks protocol {} but this ufo-sight speaks {PROTOCOL_VERSION}; \
                 install ufo-sight from the same source as ufo",
                self.version
            )));
        }
        let (w, h) = (self.width, self.height);
        if w == 0 || h == 0 || w > MAX_REGION_SIDE || h > MAX_REGION_SIDE {
            return Err(DetectError::BadImage(format!(
                "a region of {w}x{h} pixels cannot be read; each side must be 1 to \
                 {MAX_REGION_SIDE} pixels: capture a smaller or non-empty region"
            )));
        }
        Ok(w as usize * h as usize * self.format.bytes_per_pixel())
    }
}

/// The worker's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The boxes read, in screen coordinates.
    Boxes(Vec<DetectedBox>),
    /// Why the region was not read.
    Failed(DetectError),
}

impl From<Result<Vec<DetectedBox>, DetectError>> for Reply {
    fn from(r: Result<Vec<DetectedBox>, DetectError>) -> Self {
        match r {
            Ok(b) => Self::Boxes(b),
            Err(e) => Self::Failed(e),
        }
    }
}

impl From<Reply> for Result<Vec<DetectedBox>, DetectError> {
    fn from(r: Reply) -> Self {
        match r {
            Reply::Boxes(b) => Ok(b),
            Reply::Failed(e) => Err(e),
        }
    }
}

/// `body` as a frame: its length (4 bytes, little-endian), then it.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// The bytes of a request for `region`: the header's frame, then the raw pixels.
pub fn encode_request(region: &RegionImage, request: DetectRequest) -> Vec<u8> {
    // A header of plain numbers and enums always serialises.
    let header = serde_json::to_vec(&RequestHeader::of(region, request)).unwrap_or_default();
    let mut out = frame(&header);
    out.extend_from_slice(region.pixels());
    out
}

/// The length announced by a frame's first 4 bytes, refused above `max`.
pub fn frame_len(prefix: [u8; 4], max: u32, what: &str) -> Result<usize, DetectError> {
    let len = u32::from_le_bytes(prefix);
    if len > max {
        return Err(DetectError::Engine(format!(
            "the {what} announced {len} bytes, more than the {max} allowed; the worker and ufo \
             disagree on the protocol: install ufo-sight from the same source as ufo"
        )));
    }
    Ok(len as usize)
}

/// A request header parsed from its frame's body.
pub fn decode_header(body: &[u8]) -> Result<RequestHeader, DetectError> {
    serde_json::from_slice(body).map_err(|e| {
        DetectError::BadImage(format!(
            "the request header is not valid ({e}); install ufo-sight from the same source as ufo"
        ))
    })
}

/// A reply parsed from its frame's body.
pub fn decode_reply(body: &[u8]) -> Result<Reply, DetectError> {
    serde_json::from_slice(body).map_err(|e| {
        DetectError::Engine(format!(
            "the worker's reply is not valid ({e}); install ufo-sight from the same source as ufo"
        ))
    })
}

/// A reply's frame.
pub fn encode_reply(reply: &Reply) -> Vec<u8> {
    // Boxes hold strings, numbers and enums: serialising them cannot fail; should it ever,
    // the caller still gets a frame that says so.
    let body = serde_json::to_vec(reply).unwrap_or_else(|e| {
        serde_json::to_vec(&Reply::Failed(DetectError::Engine(format!(
            "the worker could not encode its reply: {e}"
        ))))
        .unwrap_or_default()
    });
    frame(&body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ufo_core::vision::{DetectedKind, DetectedWord};
    use ufo_core::Rect;

    #[test]
    fn a_request_is_its_header_frame_then_the_pixels() {
        let region = RegionImage::new((3, -4), 2, 1, PixelFormat::Rgb8, vec![1, 2, 3, 4, 5, 6])
            .expect("6 bytes of RGB");
        let bytes = encode_request(&region, DetectRequest::ReadText);
        let len = frame_len(
            bytes[..4].try_into().expect("4 bytes"),
            MAX_HEADER,
            "header",
        )
        .expect("a short header");
        let header = decode_header(&bytes[4..4 + len]).expect("a header");
        assert_eq!(header, RequestHeader::of(&region, DetectRequest::ReadText));
        assert_eq!(header.pixel_len().expect("in bounds"), 6);
        assert_eq!(&bytes[4 + len..], &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn out_of_bounds_sizes_and_other_versions_are_refused_before_allocating() {
        let mut h = RequestHeader {
            version: PROTOCOL_VERSION,
            request: DetectRequest::Controls,
            origin: (0, 0),
            width: MAX_REGION_SIDE + 1,
            height: 1,
            format: PixelFormat::Gray8,
        };
        assert!(h.pixel_len().is_err());
        h.width = 1;
        h.version += 1;
        let e = h.pixel_len().expect_err("another version");
        assert!(e.to_string().contains("same source"), "{e}");
        assert!(frame_len((MAX_REPLY + 1).to_le_bytes(), MAX_REPLY, "reply").is_err());
    }

    #[test]
    fn a_reply_round_trips_boxes_and_errors() {
        let b = DetectedBox {
            text: "OK".into(),
            rect: Rect::new(1, 2, 3, 4),
            confidence: 0.5,
            kind: DetectedKind::FramedText,
            words: vec![DetectedWord {
                text: "OK".into(),
                rect: Rect::new(1, 2, 3, 4),
                confidence: 0.5,
            }],
        };
        for reply in [
            Reply::Boxes(vec![b]),
            Reply::Failed(DetectError::TimedOut(7)),
        ] {
            let bytes = encode_reply(&reply);
            assert_eq!(decode_reply(&bytes[4..]).expect("a reply"), reply);
        }
    }

    proptest! {
        #[test]
        fn any_bytes_as_a_header_or_reply_give_an_error_not_a_panic(
            body in proptest::collection::vec(any::<u8>(), 0..300)
        ) {
            let _ = decode_header(&body).map(|h| h.pixel_len());
            let _ = decode_reply(&body);
        }
    }
}
