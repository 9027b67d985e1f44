//! The task parser (OSWorld JSON) and the accessors of a parsed task.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ufo_batch::task::Task;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(task) = Task::parse(&text, Path::new("fuzz/task.json")) {
        assert!(!task.id.trim().is_empty());
        let _ = task.app();
        let _ = task.unsupported();
        let _ = task.script_path();
        let _ = task.evaluator.func.to_vec();
    }
});
