//! The worker's side of the pipe protocol ([`crate::protocol`]): requests read from one
//! stream, each answered on the other, until the first stream ends (docs/sight.md, "The
//! worker").

use std::io::{self, Read, Write};

use ufo_core::vision::{DetectError, RegionImage};

use crate::protocol::{decode_header, encode_reply, frame_len, Reply, MAX_HEADER};
use crate::TesseractDetector;

/// Answer requests from `input` on `output` until `input` ends. An I/O error ends the loop
/// with it; a request that cannot be read as a region is answered with its error, and the
/// stream is then out of step, so the loop ends after answering it.
pub fn serve(
    detector: &TesseractDetector,
    mut input: impl Read,
    mut output: impl Write,
) -> io::Result<()> {
    loop {
        let mut prefix = [0u8; 4];
        match input.read_exact(&mut prefix) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let (reply, in_step) = match read_region(&mut input, prefix)? {
            Ok((region, request)) => (detector.detect_blocking(&region, request).into(), true),
            Err(e) => (Reply::Failed(e), false),
        };
        output.write_all(&encode_reply(&reply))?;
        output.flush()?;
        if !in_step {
            return Ok(());
        }
    }
}

/// One request's region, its header's frame length being `prefix`.
fn read_region(
    input: &mut impl Read,
    prefix: [u8; 4],
) -> io::Result<Result<(RegionImage, ufo_core::vision::DetectRequest), DetectError>> {
    let len = match frame_len(prefix, MAX_HEADER, "request header") {
        Ok(l) => l,
        Err(e) => return Ok(Err(e)),
    };
    let mut body = vec![0u8; len];
    input.read_exact(&mut body)?;
    let header = match decode_header(&body) {
        Ok(h) => h,
        Err(e) => return Ok(Err(e)),
    };
    let pixel_len = match header.pixel_len() {
        Ok(n) => n,
        Err(e) => return Ok(Err(e)),
    };
    let mut pixels = vec![0u8; pixel_len];
    input.read_exact(&mut pixels)?;
    Ok(RegionImage::new(
        header.origin,
        header.width,
        header.height,
        header.format,
        pixels,
    )
    .map(|r| (r, header.request)))
}
