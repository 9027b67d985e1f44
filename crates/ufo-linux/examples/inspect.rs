//! `cargo run -p ufo-linux --example inspect -- [WINDOW] [OUT.png]`: print a window's controls
//! as the agent sees them and write the annotated screenshot.

use ufo_linux::{inspect, LinuxConfig, LinuxDesktop};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let desktop = match LinuxDesktop::connect(LinuxConfig::default()).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match inspect(&desktop, args.first().map(String::as_str)).await {
        Ok(report) => {
            for l in &report.lines {
                println!("{l}");
            }
            for w in &report.warnings {
                eprintln!("warning: {w}");
            }
            let out = args.get(1).cloned().unwrap_or_else(|| "inspect.png".into());
            if let Err(e) = std::fs::write(&out, &report.annotated_png) {
                eprintln!("cannot write {out}: {e}");
                std::process::exit(1);
            }
            eprintln!("annotated screenshot: {out}");
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
