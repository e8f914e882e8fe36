//! What a run tells its caller while it goes: human progress lines, one JSON object per line
//! (`stream-json`), or nothing until the final envelope (`json`).

use std::io::Write;
use std::time::Instant;

use serde_json::{Value, json};

/// The output format of `splice run` / `splice pass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Human,
    Json,
    StreamJson,
    /// Nothing at all (the demo prints its own lines).
    #[value(skip)]
    Quiet,
}

/// Where events go.
pub struct Events {
    output: Output,
    started: Instant,
}

impl Events {
    pub fn new(output: Output) -> Events {
        Events {
            output,
            started: Instant::now(),
        }
    }

    pub fn output(&self) -> Output {
        self.output
    }

    /// Seconds since the run started, for human lines.
    fn clock(&self) -> String {
        format!("[{:>6.1}s]", self.started.elapsed().as_secs_f64())
    }

    /// Emit one event. `kind` is the stream-json `type`; `human` the line a person sees (if any).
    pub fn emit(&self, kind: &str, fields: Value, human: Option<String>) {
        match self.output {
            Output::StreamJson => {
                let mut obj = json!({ "type": kind });
                if let (Some(o), Value::Object(f)) = (obj.as_object_mut(), fields) {
                    o.extend(f);
                }
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", serde_json::to_string(&obj).unwrap_or_default());
                let _ = out.flush();
            }
            Output::Human => {
                if let Some(line) = human {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{} {line}", self.clock());
                    let _ = out.flush();
                }
            }
            Output::Json | Output::Quiet => {}
        }
    }
}
