//! Loading `ufo.toml`, then `UFO_*` environment variables, then flags.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use ufo_core::config::{AgentMode, BlackboardLimits, PromptTemplates};
use ufo_core::sensitive::SensitivePolicy;
use ufo_core::{Config, OnSubtaskFail};

use super::plan::SessionPlan;
use super::ConfirmPolicy;
use crate::models::PriceEntry;

/// The whole configuration file: the engine's keys plus the binary's own.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    safe_guard: Option<bool>,
    ask_question: Option<bool>,
    max_steps: Option<u32>,
    max_rounds: Option<u32>,
    json_parsing_retry: Option<u32>,
    on_subtask_fail: Option<OnSubtaskFail>,
    max_subtask_failures: Option<u32>,
    mode: Option<AgentMode>,
    memory_in_prompt: Option<usize>,
    screenshots_to_model: Option<bool>,
    structured_output: Option<ufo_core::StructuredOutput>,
    blackboard: Option<BlackboardLimits>,
    prompts: Option<PromptTemplates>,
    sensitive: Option<SensitivePolicy>,
    multi_action: Option<bool>,
    takeover_limit_s: Option<u64>,
    /// Live desktop: application name -> launch command.
    launch: Option<HashMap<String, String>>,
    /// Default model spec.
    llm: Option<String>,
    /// The host's model (default: `llm`).
    host_llm: Option<String>,
    /// The AppAgents' model (default: `llm`).
    app_llm: Option<String>,
    /// Used when a model stays unavailable after its retries.
    backup_llm: Option<String>,
    /// Stop with FAIL, reason `budget`, above this cost.
    max_cost: Option<f64>,
    /// Prices by model spec.
    prices: Option<HashMap<String, PriceEntry>>,
    /// Default confirm policy.
    confirm: Option<String>,
    /// Default trajectory root.
    runs_dir: Option<PathBuf>,
    /// MCP servers (`[mcp.servers.<name>]`).
    mcp: Option<crate::extensions::McpSection>,
    /// Third-party agents (`[agents]`).
    agents: Option<crate::extensions::AgentsSection>,
    /// Knowledge (`[knowledge]`): what the agents may look up.
    knowledge: Option<crate::config::knowledge::KnowledgeSection>,
    /// Devices by name (`[devices]`), for `--device NAME`.
    devices: Option<std::collections::BTreeMap<String, toml::Value>>,
    /// Sight (`[vision]`): text read in the pixels where the tree is silent.
    vision: Option<crate::sight::VisionSection>,
    /// Streamed model answers (`[streaming]`).
    streaming: Option<StreamingSection>,
}

/// `[streaming]`: streamed model answers and their bounds (docs/configuration.md,
/// "Streaming"); `UFO_LLM_STREAM`, `UFO_LLM_FIRST_TOKEN_SECS` and `UFO_LLM_SILENCE_SECS`
/// override it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamingSection {
    /// Ask for streamed answers (default true).
    enabled: Option<bool>,
    /// Longest wait for the first token, in seconds (default 300).
    first_token_s: Option<f64>,
    /// Longest silence between two tokens, in seconds (default 60).
    silence_s: Option<f64>,
}

impl StreamingSection {
    /// The settings, streaming on unless the section turns it off.
    fn resolve(self) -> Result<ufo_llm::StreamSettings> {
        let mut s = ufo_llm::StreamSettings {
            enabled: self.enabled.unwrap_or(true),
            ..ufo_llm::StreamSettings::default()
        };
        let secs = |key: &str, v: f64| {
            ufo_llm::spec::timeout_secs(&v.to_string())
                .map_err(|e| anyhow::anyhow!("[streaming] {key} is invalid: {e}"))
        };
        if let Some(v) = self.first_token_s {
            s.first_token = secs("first_token_s", v)?;
        }
        if let Some(v) = self.silence_s {
            s.silence = secs("silence_s", v)?;
        }
        Ok(s)
    }
}

/// Everything `ufo run` needs, resolved.
#[derive(Debug)]
pub struct Settings {
    /// Engine settings.
    pub config: Config,
    /// Model spec (the host's, and the apps' unless `app_llm` is set).
    pub llm: String,
    /// The AppAgents' model spec.
    pub app_llm: String,
    /// Backup model spec.
    pub backup_llm: Option<String>,
    /// Prices by spec.
    pub prices: HashMap<String, PriceEntry>,
    /// Live desktop launch table (name, command), from `[launch]`.
    pub launch: Vec<(String, String)>,
    /// Confirm policy.
    pub confirm: ConfirmPolicy,
    /// Root of default trajectory folders.
    pub runs_dir: PathBuf,
    /// MCP servers.
    pub mcp: crate::extensions::McpSection,
    /// Third-party agents.
    pub agents: crate::extensions::AgentsSection,
    /// Knowledge settings; `None` when no store can be placed (no `HOME`, no
    /// `XDG_DATA_HOME`, no `store` key).
    pub knowledge: Option<crate::config::knowledge::KnowledgeSettings>,
    /// The `[devices]` table: device name -> how to reach it.
    pub devices: std::collections::BTreeMap<String, crate::devices::DeviceSpec>,
    /// Sight (`[vision]`, `UFO_VISION`, `--vision`).
    pub vision: crate::sight::VisionSettings,
    /// Streamed model answers (`[streaming]`; the `UFO_LLM_*` variables apply over it).
    pub streaming: ufo_llm::StreamSettings,
    /// What a configuration file or variable did to the CONFIRM gate (weakened it, or tried
    /// to and was overruled by a flag): printed on stderr, one warning each.
    pub warnings: Vec<String>,
}

impl Settings {
    /// How every model of the session is asked for its answers (`structured_output`,
    /// `[streaming]`), the side models' too.
    pub fn answers(&self) -> crate::models::Answers {
        crate::models::Answers {
            structured_output: self.config.structured_output,
            streaming: self.streaming.clone(),
        }
    }
}

/// How a configuration file weakens the CONFIRM gate, one line each (empty: it does not):
/// `safe_guard = false`, `confirm = "yes"`, and a `[sensitive]` policy that holds less than
/// the default one.
pub fn file_weakens_the_gate(path: &Path) -> Result<Vec<String>> {
    let file = load(path)?;
    let what = format!("the configuration file {}", path.display());
    let mut out = Vec::new();
    if file.safe_guard == Some(false) {
        out.push(format!(
            "safe_guard = false in {what} approves every held action without asking"
        ));
    }
    if let Some(c) = &file.confirm {
        if c.trim().eq_ignore_ascii_case("yes") {
            out.push(format!(
                "confirm = \"yes\" in {what} approves every held action"
            ));
        }
    }
    if let Some(p) = &file.sensitive {
        out.extend(policy_weakenings(p, &what));
    }
    out.extend(launch_exemptions(file.launch.as_ref(), &what));
    Ok(out)
}

/// What a configuration file makes ufo start without asking the person, one line each
/// (empty: nothing): the `[mcp.servers]`, which ufo starts or connects to itself. A trajectory
/// folder may have been prepared by someone else, so `ufo resume` re-applies no recorded
/// configuration that does this (nor one that weakens the gate).
pub fn file_starts_programs(path: &Path) -> Result<Vec<String>> {
    let file = load(path)?;
    let what = format!("the configuration file {}", path.display());
    let servers = file.mcp.map(|m| m.servers).unwrap_or_default();
    Ok(servers
        .keys()
        .map(|name| {
            format!("[mcp.servers.{name}] in {what} starts a program or connects to a server")
        })
        .collect())
}

/// How a `[launch]` table weakens the gate: a launch command runs without confirmation
/// (it is the desktop's way to start an application), so each entry is one more command the
/// model may run unasked.
fn launch_exemptions(launch: Option<&HashMap<String, String>>, what: &str) -> Vec<String> {
    let mut entries: Vec<(&String, &String)> = launch.into_iter().flatten().collect();
    entries.sort();
    entries
        .into_iter()
        .map(|(app, command)| {
            format!(
                "[launch] {app} in {what} lets {:?} run without confirmation",
                ufo_core::inert(command)
            )
        })
        .collect()
}

/// How `policy` (from `what`) holds less than the default policy.
fn policy_weakenings(policy: &SensitivePolicy, what: &str) -> Vec<String> {
    let default = SensitivePolicy::default();
    let mut out = Vec::new();
    if !policy.enabled {
        out.push(format!(
            "[sensitive] enabled = false in {what}: only the model's own CONFIRM holds actions"
        ));
        return out;
    }
    let added: Vec<&str> = policy
        .shell_allow
        .iter()
        .filter(|p| !default.shell_allow.contains(p))
        .map(String::as_str)
        .collect();
    if !added.is_empty() {
        out.push(format!(
            "[sensitive] shell_allow in {what} lets {} run without confirmation",
            added.join(", ")
        ));
    }
    let dropped: Vec<&str> = default
        .control_words
        .iter()
        .filter(|w| !policy.control_words.contains(w))
        .map(String::as_str)
        .collect();
    if !dropped.is_empty() {
        out.push(format!(
            "[sensitive] control_words in {what} no longer hold controls named {}",
            dropped.join(", ")
        ));
    }
    if !policy.password_fields {
        out.push(format!(
            "[sensitive] password_fields = false in {what}: typing into a password field is not held"
        ));
    }
    out
}

/// Who switched the CONFIRM gate's parts, layer by layer, until the flags decide.
struct GateSources {
    /// Who switched safe_guard off, if anyone (the file, then the environment), and whether
    /// the person typed it on this command line (`--config FILE`).
    guard_off_by: Option<(String, bool)>,
    /// The confirm policy as text, and where it came from.
    confirm_text: Option<(String, String)>,
}

/// Resolve settings: file (--config, else ./ufo.toml if present), then env, then flags.
pub fn resolve(args: &SessionPlan, env: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
    let (path, mut file) = config_file(args)?;
    let what = path
        .as_ref()
        .map(|p| format!("the configuration file {}", p.display()))
        .unwrap_or_default();
    let mut warnings = file_warnings(&file, &what, args.config.is_none());
    let mut gate = GateSources {
        guard_off_by: (file.safe_guard == Some(false)).then(|| {
            (
                format!("safe_guard = false in {what}"),
                args.config.is_some(),
            )
        }),
        confirm_text: None,
    };
    let mut c = Config::default();
    take_file_keys(&mut c, &mut file);
    gate.confirm_text = file
        .confirm
        .take()
        .map(|t| (t, format!("confirm in {what}")));
    apply_env(&mut c, &mut gate, env)?;
    apply_limit_flags(&mut c, args)?;
    let confirm = confirm_policy(args.confirm, gate.confirm_text, &mut warnings)?;
    settle_guard(&mut c, gate.guard_off_by, args.confirm, &mut warnings);
    if let Some(cost) = max_cost(env, file.max_cost)? {
        c.max_cost = Some(cost);
    }
    let prices = file.prices.take().unwrap_or_default();
    check_prices(&prices)?;
    let (llm, app_llm) = model_specs(args, &mut file)?;
    let knowledge = knowledge_settings(file.knowledge.take().unwrap_or_default(), env)?;
    let vision = crate::sight::VisionSettings::resolve(
        file.vision.take().unwrap_or_default(),
        env,
        args.vision,
    )?;
    let devices = match file.devices.take() {
        Some(entries) => {
            let base = path
                .as_deref()
                .and_then(Path::parent)
                .map(|p| {
                    if p.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        p
                    }
                })
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
                .unwrap_or_default();
            crate::devices::table(entries, &base, &what)?
        }
        None => Default::default(),
    };
    Ok(Settings {
        streaming: file.streaming.take().unwrap_or_default().resolve()?,
        vision,
        devices,
        knowledge,
        config: c,
        app_llm,
        backup_llm: file.backup_llm,
        prices,
        launch: {
            let mut l: Vec<(String, String)> =
                file.launch.unwrap_or_default().into_iter().collect();
            l.sort();
            l
        },
        llm,
        confirm,
        runs_dir: file.runs_dir.unwrap_or_else(|| PathBuf::from("runs")),
        mcp: file.mcp.unwrap_or_default(),
        agents: file.agents.unwrap_or_default(),
        warnings,
    })
}

/// The `[knowledge]` section and its `UFO_KNOWLEDGE*` overrides; `None` when the store has
/// no place (no `store` key and no data directory): the session runs without knowledge.
fn knowledge_settings(
    section: crate::config::knowledge::KnowledgeSection,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<crate::config::knowledge::KnowledgeSettings>> {
    let placed = section.store.is_some()
        || env("UFO_KNOWLEDGE_STORE").is_some_and(|v| !v.is_empty())
        || ufo_knowledge::store::default_path().is_ok();
    if !placed {
        return Ok(None);
    }
    crate::config::knowledge::KnowledgeSettings::resolve(&section, env).map(Some)
}

/// The configuration file's path (--config, else ./ufo.toml if present) and its contents
/// (empty without one).
fn config_file(args: &SessionPlan) -> Result<(Option<PathBuf>, FileConfig)> {
    let path = args.config.clone().or_else(|| {
        let p = PathBuf::from("ufo.toml");
        p.exists().then_some(p)
    });
    let file = match &path {
        Some(p) => load(p)?,
        None => FileConfig::default(),
    };
    Ok((path, file))
}

/// How the file `what` weakens the gate before any flag is read: its `[sensitive]` policy
/// and, for ./ufo.toml (`found_here`), its launch commands.
fn file_warnings(file: &FileConfig, what: &str, found_here: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(p) = &file.sensitive {
        warnings.extend(policy_weakenings(p, what));
    }
    // ./ufo.toml is picked up from the current folder, which may not be the person's own: its
    // launch commands are named, since each runs unconfirmed (a --config file was typed).
    if found_here {
        warnings.extend(launch_exemptions(file.launch.as_ref(), what));
    }
    warnings
}

/// The engine's keys the file sets, taken out of it into `c`.
fn take_file_keys(c: &mut Config, file: &mut FileConfig) {
    macro_rules! take {
        ($($f:ident),*) => { $( if let Some(v) = file.$f.take() { c.$f = v; } )* };
    }
    take!(
        safe_guard,
        ask_question,
        max_steps,
        max_rounds,
        json_parsing_retry,
        on_subtask_fail,
        max_subtask_failures,
        mode,
        memory_in_prompt,
        screenshots_to_model,
        structured_output,
        blackboard,
        prompts,
        sensitive,
        multi_action,
        takeover_limit_s
    );
}

/// The `UFO_*` environment variables over the file's values.
fn apply_env(
    c: &mut Config,
    gate: &mut GateSources,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    if let Some(v) = env("UFO_SAFE_GUARD") {
        c.safe_guard = parse_bool("UFO_SAFE_GUARD", &v)?;
        gate.guard_off_by =
            (!c.safe_guard).then(|| (format!("UFO_SAFE_GUARD={}", v.trim()), false));
    }
    if let Some(v) = env("UFO_ASK_QUESTION") {
        c.ask_question = parse_bool("UFO_ASK_QUESTION", &v)?;
    }
    if let Some(v) = env("UFO_MAX_STEPS") {
        c.max_steps = parse_num("UFO_MAX_STEPS", &v)?;
    }
    if let Some(v) = env("UFO_MAX_ROUNDS") {
        c.max_rounds = parse_num("UFO_MAX_ROUNDS", &v)?;
    }
    if let Some(v) = env("UFO_JSON_PARSING_RETRY") {
        c.json_parsing_retry = parse_num("UFO_JSON_PARSING_RETRY", &v)?;
    }
    if let Some(v) = env("UFO_MAX_SUBTASK_FAILURES") {
        c.max_subtask_failures = parse_num("UFO_MAX_SUBTASK_FAILURES", &v)?;
    }
    if let Some(v) = env("UFO_ON_SUBTASK_FAIL") {
        c.on_subtask_fail = match v.trim().to_ascii_lowercase().as_str() {
            "replan" => OnSubtaskFail::Replan,
            "finish" => OnSubtaskFail::Finish,
            _ => bail!("UFO_ON_SUBTASK_FAIL is {v:?}; set it to replan or finish"),
        };
    }
    if let Some(v) = env("UFO_STRUCTURED_OUTPUT") {
        c.structured_output = ufo_core::StructuredOutput::parse(&v)
            .map_err(|e| anyhow::anyhow!("UFO_STRUCTURED_OUTPUT is invalid: {e}"))?;
    }
    if let Some(v) = env("UFO_TAKEOVER_LIMIT_S") {
        c.takeover_limit_s = u64::from(parse_num("UFO_TAKEOVER_LIMIT_S", &v)?);
    }
    if let Some(v) = env("UFO_CONFIRM") {
        gate.confirm_text = Some((v, "UFO_CONFIRM".to_string()));
    }
    Ok(())
}

/// `--max-steps`, `--max-rounds` and `--structured-output` over the file and the environment;
/// neither limit may be 0.
fn apply_limit_flags(c: &mut Config, args: &SessionPlan) -> Result<()> {
    if let Some(m) = args.structured_output {
        c.structured_output = m;
    }
    if let Some(n) = args.max_steps {
        c.max_steps = n;
    }
    if let Some(n) = args.max_rounds {
        c.max_rounds = n;
    }
    if c.max_steps == 0 {
        bail!("max_steps is 0; set it to 1 or more");
    }
    if c.max_rounds == 0 {
        bail!("max_rounds is 0; set it to 1 or more");
    }
    Ok(())
}

/// The confirm policy: the `--confirm` flag, else the text from the environment or the file
/// (a warning when it approves everything), else ask.
fn confirm_policy(
    flag: Option<ConfirmPolicy>,
    text: Option<(String, String)>,
    warnings: &mut Vec<String>,
) -> Result<ConfirmPolicy> {
    Ok(match (flag, text) {
        (Some(p), _) => p,
        (None, Some((t, from))) => match t.trim().to_ascii_lowercase().as_str() {
            "ask" => ConfirmPolicy::Ask,
            "yes" => {
                warnings.push(format!(
                    "{from} is \"yes\": every held action is approved without asking (pass --confirm ask or --confirm no to keep the gate)"
                ));
                ConfirmPolicy::Yes
            }
            "no" => ConfirmPolicy::No,
            _ => bail!("confirm is {t:?}; use ask, yes or no"),
        },
        (None, None) => ConfirmPolicy::Ask,
    })
}

/// Whether a `safe_guard = false` from the file or the environment stands, with a warning
/// either way. A flag the person typed wins over the environment and the ./ufo.toml read from
/// the current folder: `--confirm no` (or ask) is never turned into "approve everything" by a
/// safe_guard = false they did not type. A file they name with --config is theirs.
fn settle_guard(
    c: &mut Config,
    guard_off_by: Option<(String, bool)>,
    flag: Option<ConfirmPolicy>,
    warnings: &mut Vec<String>,
) {
    let Some((by, typed)) = guard_off_by else {
        return;
    };
    match flag {
        Some(flag) if !typed => {
            c.safe_guard = true;
            warnings.push(format!(
                "{by} is ignored: --confirm {} on the command line decides what happens to held actions",
                flag.as_str()
            ));
        }
        Some(flag) => warnings.push(format!(
            "{by} approves every held action without asking, whatever --confirm {} says",
            flag.as_str()
        )),
        None => warnings.push(format!(
            "{by} approves every held action without asking (pass --confirm no or --confirm ask to keep the gate)"
        )),
    }
}

/// The cost budget: `UFO_MAX_COST`, else the file's `max_cost`, else none.
fn max_cost(env: &dyn Fn(&str) -> Option<String>, file: Option<f64>) -> Result<Option<f64>> {
    if let Some(v) = env("UFO_MAX_COST") {
        let cost = v.trim().parse::<f64>().ok();
        return Ok(Some(check_amount(cost, "UFO_MAX_COST", &v)?));
    }
    file.map(|cost| {
        check_amount(
            Some(cost),
            "max_cost in the configuration file",
            &cost.to_string(),
        )
    })
    .transpose()
}

/// Every price of the file's `[prices]` is a valid amount.
fn check_prices(prices: &HashMap<String, PriceEntry>) -> Result<()> {
    for (spec, p) in prices {
        for (field, value) in [
            ("input_per_1k", p.input_per_1k),
            ("output_per_1k", p.output_per_1k),
        ] {
            check_amount(
                Some(value),
                &format!("{field} of [prices.\"{spec}\"] in the configuration file"),
                &value.to_string(),
            )?;
        }
    }
    Ok(())
}

/// The host's and the AppAgents' model specs: --llm names the model of every agent;
/// otherwise the file's per-agent keys apply.
fn model_specs(args: &SessionPlan, file: &mut FileConfig) -> Result<(String, String)> {
    let flag_llm = args.llm.clone();
    let app_llm = flag_llm.clone().or(file.app_llm.take());
    let llm = flag_llm
        .or(file.host_llm.take())
        .or(file.llm.take())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no model given; pass --llm (e.g. --llm openai:gpt-4o or --llm script:FILE.jsonl), \
                 set UFO_LLM, or put llm = \"...\" in ufo.toml"
            )
        })?;
    let app_llm = app_llm.unwrap_or_else(|| llm.clone());
    Ok((llm, app_llm))
}

/// The runs folder for `ufo runs`: `runs_dir` of the configuration file at `path` when it
/// exists, else `runs`.
pub fn runs_dir_from_file(path: &Path) -> Result<PathBuf> {
    if !path.exists() {
        return Ok(PathBuf::from("runs"));
    }
    Ok(load(path)?
        .runs_dir
        .unwrap_or_else(|| PathBuf::from("runs")))
}

/// The `[launch]` table for `ufo mcp serve`: from `config` when given, else from ./ufo.toml
/// when it exists, else empty (the built-in table applies in every case).
pub fn launch_from_file(config: Option<&Path>) -> Result<Vec<(String, String)>> {
    let path = match config {
        Some(p) => p.to_path_buf(),
        None => {
            let p = PathBuf::from("ufo.toml");
            if !p.exists() {
                return Ok(Vec::new());
            }
            p
        }
    };
    let mut l: Vec<(String, String)> = load(&path)?
        .launch
        .unwrap_or_default()
        .into_iter()
        .collect();
    l.sort();
    Ok(l)
}

fn load(path: &Path) -> Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the configuration file {}", path.display()))?;
    toml::from_str(&text).with_context(|| {
        format!(
            "the configuration file {} is not valid; fix the key named below",
            path.display()
        )
    })
}

fn parse_bool(name: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => bail!("{name} is {v:?}; set it to true or false"),
    }
}

/// A cost or a price: a finite number, 0 or more. NaN would switch the budget off (every
/// comparison with NaN is false), an infinity or a negative value would make no sense.
fn check_amount(value: Option<f64>, name: &str, text: &str) -> Result<f64> {
    match value {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => bail!("{name} is {text:?}; set it to a number, 0 or more (e.g. 2.5)"),
    }
}

fn parse_num(name: &str, v: &str) -> Result<u32> {
    v.trim()
        .parse()
        .with_context(|| format!("{name} is {v:?}; set it to a whole number"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> SessionPlan {
        let mut v = vec!["ufo", "run", "req", "--llm", "script:x"];
        v.extend_from_slice(extra);
        match crate::cli::Cli::parse_from(v).command {
            crate::cli::Command::Run(a) => a.plan(),
            other => panic!("expected a run command, got {other:?}"),
        }
    }

    #[test]
    fn file_then_env_then_flags() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ufo.toml");
        std::fs::write(
            &p,
            "max_steps = 7\nmax_rounds = 2\non_subtask_fail = \"finish\"\n",
        )
        .expect("write");
        let p = p.to_string_lossy().to_string();
        let env = |k: &str| (k == "UFO_MAX_STEPS").then(|| "9".to_string());
        let s = resolve(&args(&["--config", &p]), &env).expect("ok");
        assert_eq!(s.config.max_steps, 9);
        assert_eq!(s.config.max_rounds, 2);
        assert_eq!(s.config.on_subtask_fail, OnSubtaskFail::Finish);
        let s = resolve(&args(&["--config", &p, "--max-steps", "3"]), &env).expect("ok");
        assert_eq!(s.config.max_steps, 3);
    }

    /// `structured_output`: `auto` by default; the file, then UFO_STRUCTURED_OUTPUT, then
    /// `--structured-output`; a bad value names the choices.
    #[test]
    fn structured_output_from_file_env_and_flag() {
        use ufo_core::StructuredOutput;
        let none = |_: &str| None;
        assert_eq!(
            resolve(&args(&[]), &none)
                .expect("ok")
                .config
                .structured_output,
            StructuredOutput::Auto
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ufo.toml");
        std::fs::write(&p, "structured_output = \"json\"\n").expect("write");
        let p = p.to_string_lossy().to_string();
        let mode = |extra: &[&str], env: &dyn Fn(&str) -> Option<String>| {
            let mut all = vec!["--config", p.as_str()];
            all.extend_from_slice(extra);
            resolve(&args(&all), env)
                .expect("ok")
                .config
                .structured_output
        };
        assert_eq!(mode(&[], &none), StructuredOutput::Json);
        let env_off = |k: &str| (k == "UFO_STRUCTURED_OUTPUT").then(|| "OFF".to_string());
        assert_eq!(mode(&[], &env_off), StructuredOutput::Off);
        assert_eq!(
            mode(&["--structured-output", "schema"], &env_off),
            StructuredOutput::Schema
        );
        let env_bad = |k: &str| (k == "UFO_STRUCTURED_OUTPUT").then(|| "grammar".to_string());
        let e = resolve(&args(&[]), &env_bad).expect_err("bad mode");
        assert!(
            format!("{e:#}").contains("auto, schema, json or off"),
            "{e:#}"
        );
        let bad_flag =
            crate::cli::Cli::try_parse_from(["ufo", "run", "req", "--structured-output", "yes"]);
        assert!(bad_flag.is_err());
    }

    /// `[streaming]`: on by default with 300 s to the first token and 60 s of silence; the
    /// file sets them; a bound that is not a positive number of seconds is refused.
    #[test]
    fn streaming_section() {
        let none = |_: &str| None;
        let s = resolve(&args(&[]), &none).expect("ok").streaming;
        assert!(s.enabled);
        assert_eq!((s.first_token.as_secs(), s.silence.as_secs()), (300, 60));
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ufo.toml");
        std::fs::write(
            &p,
            "[streaming]\nenabled = false\nfirst_token_s = 900\nsilence_s = 5.5\n",
        )
        .expect("write");
        let p = p.to_string_lossy().to_string();
        let s = resolve(&args(&["--config", &p]), &none)
            .expect("ok")
            .streaming;
        assert!(!s.enabled);
        assert_eq!(s.first_token.as_secs(), 900);
        assert_eq!(s.silence.as_millis(), 5500);
        std::fs::write(&p, "[streaming]\nsilence_s = 0\n").expect("write");
        let e = resolve(&args(&["--config", &p]), &none).expect_err("0 s");
        assert!(format!("{e:#}").contains("silence_s"), "{e:#}");
    }

    #[test]
    fn bad_values_say_what_to_fix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ufo.toml");
        std::fs::write(&p, "max_stepz = 7\n").expect("write");
        let p = p.to_string_lossy().to_string();
        let e = resolve(&args(&["--config", &p]), &|_| None).expect_err("unknown key");
        assert!(format!("{e:#}").contains("max_stepz"), "{e:#}");
        let e = resolve(&args(&[]), &|k| {
            (k == "UFO_SAFE_GUARD").then(|| "maybe".into())
        })
        .expect_err("bad bool");
        assert!(e.to_string().contains("true or false"));
    }

    /// Defect: `safe_guard = false` in ./ufo.toml (read from the current folder) or
    /// `UFO_SAFE_GUARD=false` overruled a typed `--confirm no`. A typed flag wins now; a file
    /// named with `--config` is the person's own and still switches the guard off. Each is
    /// named in a warning.
    #[test]
    fn a_typed_confirm_flag_wins_over_safe_guard_off_it_did_not_type() {
        let env_off = |k: &str| (k == "UFO_SAFE_GUARD").then(|| "false".to_string());
        let s = resolve(&args(&["--confirm", "no"]), &env_off).expect("ok");
        assert!(s.config.safe_guard);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("UFO_SAFE_GUARD=false") && w.contains("--confirm no")),
            "{:?}",
            s.warnings
        );
        let s = resolve(&args(&[]), &env_off).expect("ok");
        assert!(!s.config.safe_guard);
        assert!(s.warnings.iter().any(|w| w.contains("UFO_SAFE_GUARD")));

        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("mine.toml");
        std::fs::write(&p, "safe_guard = false\n").expect("write");
        let p = p.to_string_lossy().to_string();
        let s = resolve(&args(&["--config", &p, "--confirm", "no"]), &|_| None).expect("ok");
        assert!(
            !s.config.safe_guard,
            "a typed --config file is the person's"
        );
        assert!(
            s.warnings.iter().any(|w| w.contains("mine.toml")),
            "{:?}",
            s.warnings
        );

        let s = resolve(&args(&[]), &|_| None).expect("ok");
        assert!(
            s.config.safe_guard && s.warnings.is_empty(),
            "{:?}",
            s.warnings
        );
    }

    /// Defect 15: `UFO_MAX_COST=NaN` used to switch the budget off.
    #[test]
    fn max_cost_and_prices_must_be_finite_and_not_negative() {
        for bad in ["NaN", "nan", "inf", "-inf", "-1", "1e999", "cheap"] {
            let e = resolve(&args(&[]), &|k| {
                (k == "UFO_MAX_COST").then(|| bad.to_string())
            })
            .expect_err(bad);
            assert!(e.to_string().contains("UFO_MAX_COST"), "{bad}: {e}");
            assert!(e.to_string().contains("0 or more"), "{bad}: {e}");
        }
        let ok = resolve(&args(&[]), &|k| {
            (k == "UFO_MAX_COST").then(|| "0.25".into())
        });
        assert_eq!(ok.expect("ok").config.max_cost, Some(0.25));

        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("ufo.toml");
        for (text, what) in [
            ("max_cost = nan\n", "max_cost"),
            ("max_cost = -inf\n", "max_cost"),
            (
                "[prices.\"openai:m\"]\ninput_per_1k = nan\noutput_per_1k = 1.0\n",
                "input_per_1k",
            ),
            (
                "[prices.\"openai:m\"]\ninput_per_1k = 1.0\noutput_per_1k = -2.0\n",
                "output_per_1k",
            ),
        ] {
            std::fs::write(&p, text).expect("write");
            let path = p.to_string_lossy().to_string();
            let e = resolve(&args(&["--config", &path]), &|_| None).expect_err(text);
            assert!(e.to_string().contains(what), "{text}: {e}");
        }
    }
}
