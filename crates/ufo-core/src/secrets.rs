//! Which environment variables are secrets that no process ufo starts may inherit.
//!
//! ufo holds model-provider keys in its own environment. Every child (shell agent commands,
//! the host's `Bash`, batch config steps and getters, launched applications, MCP stdio
//! servers) starts with these variables removed, so a prompt-injected command such as
//! `echo $OPENAI_API_KEY` has nothing to print. An MCP server that needs a key gets it only
//! when its `[mcp.servers.<name>] env` passes it explicitly.
//!
//! The rule ([`is_secret_env`]), on the variable's name, ASCII case-insensitive:
//! - ufo's own model settings: any `UFO_*` name containing `LLM` (`UFO_LLM`, `UFO_LLM_API_KEY`,
//!   `UFO_LLM_BASE_URL`, `UFO_LLM_HEADERS`, ...);
//! - the providers ufo talks to: any name starting with `OPENAI_`, `ANTHROPIC_` or
//!   `AZURE_OPENAI_` (keys, and endpoints that may carry credentials);
//! - credentials by suffix: names ending with one of [`SECRET_SUFFIXES`] (`_API_KEY`,
//!   `_ACCESS_TOKEN`, `_SECRET_ACCESS_KEY`, ...);
//! - a few well-known token names without such a suffix ([`SECRET_NAMES`]: `HF_TOKEN`, ...).
//!
//! A bare `_TOKEN` suffix is not enough: desktop variables such as `XDG_ACTIVATION_TOKEN` are
//! what launched applications need.

/// Name endings that mark a credential.
pub const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_API_TOKEN",
    "_AUTH_TOKEN",
    "_ACCESS_TOKEN",
    "_SESSION_TOKEN",
    "_SECRET_KEY",
    "_SECRET_ACCESS_KEY",
    "_CLIENT_SECRET",
];

/// Name beginnings of the model providers ufo talks to.
pub const SECRET_PREFIXES: &[&str] = &["OPENAI_", "ANTHROPIC_", "AZURE_OPENAI_"];

/// Well-known token variables without a credential suffix.
pub const SECRET_NAMES: &[&str] = &[
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
];

/// Whether the environment variable `name` is a secret children must not inherit.
pub fn is_secret_env(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    (n.starts_with("UFO_") && n.contains("LLM"))
        || SECRET_PREFIXES.iter().any(|p| n.starts_with(p))
        || SECRET_SUFFIXES.iter().any(|s| n.ends_with(s))
        || SECRET_NAMES.contains(&n.as_str())
}

/// The secret names among `names` (e.g. the names of the current environment), in order.
pub fn secret_names<I, S>(names: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    names
        .into_iter()
        .filter(|n| is_secret_env(n.as_ref()))
        .map(|n| n.as_ref().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_keys_and_ufo_model_settings_are_secrets() {
        for n in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AZURE_OPENAI_API_KEY",
            "AZURE_OPENAI_ENDPOINT",
            "OPENAI_BASE_URL",
            "UFO_LLM",
            "UFO_LLM_API_KEY",
            "UFO_LLM_BASE_URL",
            "UFO_LLM_HEADERS",
            "ufo_llm_api_key",
            "GROQ_API_KEY",
            "MISTRAL_APIKEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "SLACK_AUTH_TOKEN",
            "HF_TOKEN",
            "GITHUB_TOKEN",
        ] {
            assert!(is_secret_env(n), "{n} should be a secret");
        }
    }

    #[test]
    fn ordinary_and_desktop_variables_pass() {
        for n in [
            "PATH",
            "HOME",
            "DISPLAY",
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_ACTIVATION_TOKEN",
            "UFO_MAX_STEPS",
            "UFO_LOG",
            "LANG",
            "API_KEYBOARD_LAYOUT",
        ] {
            assert!(!is_secret_env(n), "{n} should pass");
        }
        assert_eq!(
            secret_names(["PATH", "OPENAI_API_KEY", "HOME", "UFO_LLM_TIMEOUT_SECS"]),
            ["OPENAI_API_KEY", "UFO_LLM_TIMEOUT_SECS"]
        );
    }
}
