//! The model-response parsers: the tolerant JSON finder and the typed host/app responses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ufo_core::parse::parse_object;
use ufo_core::response::{AppResponse, HostResponse};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let found = parse_object(&text);
    let host = HostResponse::parse(&text);
    let app = AppResponse::parse(&text);
    if found.is_err() {
        assert!(host.is_err() && app.is_err());
    }
});
